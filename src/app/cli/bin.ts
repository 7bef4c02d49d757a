import { runCli } from './main.js';

await runCli(process.argv);
