/**
 * Ctrl-C and SIGTERM in the middle of a command: what must happen before the process exits (the
 * export stops its writes and removes what it staged, the local world rolls back a rotation half
 * done, releases the leases it holds, saves its state and releases the lock), then the exit with the
 * shell's code for the signal. Node's default is to die on the
 * spot, which left staged files and an unsaved state behind.
 *
 * Steps run one after the other in the order they were registered: the export registers its step
 * before it opens the local world, so its writes stop before the world saves and closes. Then the
 * releases (`releaseOnInterrupt`: the state lock), once nothing of the command can write any more.
 * A second signal, or steps taking longer than STEPS_BOUND_MS, ends the process at once, with one
 * line saying what that cut short (`onForcedExit`; `interrupted_forced`, `interrupted_timed_out`),
 * as exiting in silence left the operator guessing and the lock behind.
 */
export type InterruptStep = (signal: NodeJS.Signals) => Promise<void> | void;

/** 128 + the signal's number, as a shell reports a process the signal ended. */
export function interruptExitCode(signal: NodeJS.Signals): number {
  return signal === 'SIGTERM' ? 143 : 130;
}

/** Long enough for a world to save its files; short enough that a stuck step does not keep a killed command alive. */
const STEPS_BOUND_MS = 10_000;
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

const steps: InterruptStep[] = [];
/**
 * What a second signal's exit still does: synchronously, since nothing after process.exit waits
 * (`onForcedExit`). Each returns its part of the line, or nothing.
 */
export type ForcedExitStep = () => string | undefined;
const forcedExitSteps: ForcedExitStep[] = [];
/** Writes the second signal's line synchronously (the binary: stderr, in --json's form when asked). */
export type ForcedExitWriter = (line: { exitCode: number; code: string; message: string; hint: string | null }) => void;
let forcedExitWriter: ForcedExitWriter | undefined;
/** The signal whose steps are running, once one is handled. */
let firstSignal: NodeJS.Signals | undefined;
/** Run after every step: what a command holds until its very end (releaseOnInterrupt). */
const releases: InterruptStep[] = [];
/** The binary's step for a signal before the command started its work (`onInterruptBeforeWork`). */
let beforeWork: InterruptStep | undefined;
let stopping = false;
let speaking = false;

/**
 * Whether the command may still write to the terminal. Once a signal is handled the command goes on
 * running until the process exits, and what it says then (a write that failed because its staged
 * file was removed, a failed row) is an effect of the interrupt, not news: only the steps' own line
 * is shown (`speak`). The binary gates its streams with it (bin/acctops.ts).
 */
export function outputOpen(): boolean {
  return !stopping || speaking;
}

/** Writes a step's own line (synchronous writes in `write`) while the command's output is closed. */
export function speak(write: () => void): void {
  speaking = true;
  try {
    write();
  } finally {
    speaking = false;
  }
}

/**
 * Runs `step` if the process is interrupted before the returned function is called. The handler
 * is installed only while some step is registered: a command that registers none keeps Node's
 * default (the process ends at once), once its work has started (`workStarted`).
 */
export function onInterrupt(step: InterruptStep): () => void {
  // A command's own step says what became of its work from now on. The handler stays installed:
  // removing it, even for a moment, would drop a signal Node has received but not yet dispatched.
  if (step !== beforeWork) dropBeforeWork();
  return register(steps, step);
}

/**
 * Runs `release` if the process is interrupted before the returned function is called, after every
 * step (`onInterrupt`), registered before or after it: the state lock is released once the world
 * has saved, not before. Registered before the claim is made, it covers the moment the claim is
 * made too; the command's own line, if any, stays its steps' (or the binary's "before anything was
 * written", which a claim does not make untrue).
 */
export function releaseOnInterrupt(release: InterruptStep): () => void {
  return register(releases, release);
}

/** Adds `step` to `list` with the handler installed; the returned function takes it out again. */
function register(list: InterruptStep[], step: InterruptStep): () => void {
  list.push(step);
  listen(true);
  return () => {
    const index = list.indexOf(step);
    if (index >= 0) list.splice(index, 1);
    // While stopping, the handler stays: a second signal must still end the process at once.
    if (nothingRegistered() && !stopping) listen(false);
  };
}

function nothingRegistered(): boolean {
  return steps.length === 0 && releases.length === 0;
}

let listening = false;
function listen(on: boolean): void {
  if (on === listening) return;
  listening = on;
  for (const signal of SIGNALS) {
    if (on) process.on(signal, interrupted);
    else process.off(signal, interrupted);
  }
}

function interrupted(signal: NodeJS.Signals): void {
  const code = interruptExitCode(signal);
  if (stopping) forcedExit(signal, code);
  stopping = true;
  firstSignal = signal;
  // The bound used to exit in silence, the operator left to guess what was saved: it says so as a second signal does.
  setTimeout(
    () =>
      exitNow(
        code,
        'interrupted_timed_out',
        `stopped after ${STEPS_BOUND_MS / 1000} s, before the clean-up after ${signal} had finished (a step did not end in time)`,
      ),
    STEPS_BOUND_MS,
  );
  void (async () => {
    for (const step of [...steps, ...releases]) {
      try {
        await step(signal);
      } catch {
        // Every step gets its turn: the world must still save and unlock when the export's step failed.
      }
    }
    process.exit(code);
  })();
}

/**
 * Runs `step` if a second signal ends the process before the returned function is called: it must
 * be synchronous (it runs just before process.exit) and returns its part of the line, or nothing.
 * What holds something a second signal abandons says what becomes of it (the state lock, a world
 * that had not saved).
 */
export function onForcedExit(step: ForcedExitStep): () => void {
  forcedExitSteps.push(step);
  return () => {
    const index = forcedExitSteps.indexOf(step);
    if (index >= 0) forcedExitSteps.splice(index, 1);
  };
}

/** Where the second signal's line goes: set by the binary (bin/acctops.ts); without one, none is written. */
export function setForcedExitWriter(writer: ForcedExitWriter | undefined): void {
  forcedExitWriter = writer;
}

/**
 * A second signal while the first one's steps run: the steps are abandoned and the process ends
 * now, after the synchronous steps (`onForcedExit`) and one line: a second Ctrl-C is how an
 * operator gets out of steps that seem stuck, and must not leave them guessing what was saved.
 */
function forcedExit(signal: NodeJS.Signals, code: number): never {
  const first = firstSignal === undefined || firstSignal === signal ? '' : ` after ${firstSignal}`;
  return exitNow(
    code,
    'interrupted_forced',
    `stopped at once by a second signal (${signal}${first}), before the clean-up after the first had finished`,
  );
}

/**
 * Ends the process now, the steps abandoned (a second signal, or the steps past STEPS_BOUND_MS):
 * the synchronous parts (`onForcedExit`) run, then one line, `what` followed by what they say.
 */
function exitNow(code: number, errorCode: string, what: string): never {
  const parts: string[] = [];
  // Last registered first: what was claimed first (the state lock) is given up last, as on a first signal.
  for (const step of [...forcedExitSteps].reverse()) {
    try {
      const part = step();
      if (part !== undefined) parts.push(part);
    } catch {
      // The exit must happen whatever a step does; the line says what the others did.
    }
  }
  try {
    speak(() =>
      forcedExitWriter?.({
        exitCode: code,
        code: errorCode,
        message: `${what}${parts.length > 0 ? `: ${parts.join('; ')}` : ''}`,
        hint: null,
      }),
    );
  } catch {
    // A closed stderr must not keep the process alive.
  }
  process.exit(code);
}

/**
 * The binary's line for a signal that lands before the command has started anything (Node's
 * default would end it without a word, and an export promises a line saying whether anything was
 * published). It stays until `workStarted`, or until a command registers a step of its own, whose
 * line then says what happened; a command with neither gets Node's default back at its start
 * (cli/commands/host.ts).
 */
export function onInterruptBeforeWork(step: InterruptStep): void {
  dropBeforeWork();
  beforeWork = step;
  onInterrupt(step);
}

/** From now on the command's own steps (or Node's default) answer a signal: the "before anything was written" line would no longer be true. */
export function workStarted(): void {
  if (dropBeforeWork() && nothingRegistered() && !stopping) listen(false);
}

function dropBeforeWork(): boolean {
  if (beforeWork === undefined) return false;
  const index = steps.indexOf(beforeWork);
  if (index >= 0) steps.splice(index, 1);
  beforeWork = undefined;
  return true;
}

/**
 * What bin/acctops.cjs sets before it loads the CLI (a second or more from the TypeScript
 * sources): its handler holds a signal instead of dying on it, so that the line can still be said.
 */
interface HeldSignals {
  signal(): NodeJS.Signals | undefined;
  release(): void;
}
const HELD_SIGNALS = Symbol.for('acctops.heldSignals');

/**
 * Takes over from bin/acctops.cjs's (or bin/demo.cjs's) handler, and handles the signal it held,
 * if any: true then, and the caller starts nothing, since the process is exiting.
 */
export function adoptHeldSignals(): boolean {
  const held = (globalThis as { [HELD_SIGNALS]?: HeldSignals })[HELD_SIGNALS];
  if (held === undefined) return false;
  delete (globalThis as { [HELD_SIGNALS]?: HeldSignals })[HELD_SIGNALS];
  held.release();
  const signal = held.signal();
  if (signal === undefined) return false;
  interrupted(signal);
  return true;
}
