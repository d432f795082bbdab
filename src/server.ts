import { runProcess } from './processes/run-process.js';
runProcess('web');
