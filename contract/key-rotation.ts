/**
 * How long after the rotation doctor gives a stuck rotation up it still leaves that rotation's key
 * alone: a finishSecret already running (Secrets Manager retries a rotation as late as it likes)
 * may promote the key meanwhile (docs/key-rotation.md, "finishSecret and the doctor"). The window
 * holds only while the rotation function's timeout is shorter, which the stack checks at synth.
 */
export const ROTATION_LATE_FINISH_MS = 20 * 60_000;
