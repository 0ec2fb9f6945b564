// dynalite in a process of its own for the refresh benchmark: in memory, port 0, stops on SIGTERM.
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => {
  console.log(`dynalite listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
