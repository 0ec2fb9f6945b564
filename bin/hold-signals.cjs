// Required first by the entries (bin/acctops.cjs, bin/demo.cjs): Ctrl-C or SIGTERM while the rest
// loads is held, not fatal (Node's default would end the process without a word). The code that
// loads takes over with cli/interrupt.ts's adoptHeldSignals and says in one line what the signal
// stopped; a second signal ends the process at once.
'use strict';

let heldSignal;
function holdSignal(signal) {
  if (heldSignal !== undefined) process.exit(signal === 'SIGTERM' ? 143 : 130);
  heldSignal = signal;
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, holdSignal);
globalThis[Symbol.for('acctops.heldSignals')] = {
  signal: () => heldSignal,
  release: () => {
    for (const signal of ['SIGINT', 'SIGTERM']) process.off(signal, holdSignal);
  },
};
