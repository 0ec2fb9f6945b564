// Required first by the entries (bin/acctops.cjs, bin/demo.cjs): Ctrl-C or SIGTERM while the rest
// loads is held, not fatal (Node's default would end the process without a word). The code that
// loads takes over with cli/interrupt.ts's adoptHeldSignals and says in one line what the signal
// stopped; a second signal ends the process at once, with its own line (decision 103).
'use strict';

let heldSignal;
function holdSignal(signal) {
  if (heldSignal !== undefined) forcedExit(signal);
  heldSignal = signal;
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, holdSignal);
globalThis[Symbol.for('acctops.heldSignals')] = {
  signal: () => heldSignal,
  release: () => {
    for (const signal of ['SIGINT', 'SIGTERM']) process.off(signal, holdSignal);
  },
};

/**
 * The second signal's line, in the form of cli/interrupt.ts's (`interrupted_forced`, README "Exit
 * codes"), written here by hand: the CLI's modules are what is still loading, and requiring them
 * would put their load in every start. Nothing of a command has run yet, so nothing was written.
 * Today's entries load synchronously and Node hands a signal over only once they yield, by when
 * cli/interrupt.ts answers it; this covers a load that yields (an `await import()` at the top).
 */
function forcedExit(signal) {
  const exitCode = signal === 'SIGTERM' ? 143 : 130;
  const after = heldSignal === signal ? '' : ` after ${heldSignal}`;
  const message = `stopped at once by a second signal (${signal}${after}) while acctops was still loading, before any command had started: nothing was written, and the state is as the last command left it`;
  const line = process.argv.includes('--json')
    ? JSON.stringify({ error: { exitCode, code: 'interrupted_forced', message, hint: null } })
    : `acctops: error: ${message}`;
  try {
    require('node:fs').writeSync(2, `${line}\n`);
  } catch {
    // A closed stderr must not keep the process alive.
  }
  process.exit(exitCode);
}
