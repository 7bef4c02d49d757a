import { runCli } from './cli/main.js';

// `npm start`: the same as `scores serve`.
await runCli(['node', 'scores', 'serve', ...process.argv.slice(2)]);
