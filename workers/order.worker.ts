import { startOrderWorker } from '../src/queue/order.worker-runner.js';
import { runProcess } from '../src/process.js';

runProcess('worker', startOrderWorker);
