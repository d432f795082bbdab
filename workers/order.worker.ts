import { startOrderWorker } from '../src/processes/order.worker-runner.js';
import { runProcess } from '../src/processes/run-process.js';

runProcess('worker', startOrderWorker);
