import { runProcess } from '../src/processes/run-process.js';
runProcess('worker');
