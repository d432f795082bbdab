import { startOrderWorker } from '../src/processes/order.worker-runner.js';
import { runProcess } from '../src/process.js';

runProcess('worker', startOrderWorker);
