// How the Lambda Node.js runtime starts node for a function: what the benchmarks imitate.

/** How the Lambda Node.js runtime starts a function: the node flags it adds, and the NODE_OPTIONS it keeps. */
export interface LambdaNodeStart {
  args: string[];
  nodeOptions: string | undefined;
}

/**
 * What the Lambda Node.js runtime's bootstrap does for a function of `memoryMb` with this
 * NODE_OPTIONS: it adds --expose-gc, and both heap flags (new space = memory / 10, semi-space half
 * of it, old space the rest) unless NODE_OPTIONS names either of them, in either spelling, in which
 * case it adds neither and NODE_OPTIONS decides.
 */
export function lambdaNodeStart(memoryMb: number, nodeOptions: string | undefined): LambdaNodeStart {
  const namesHeapFlag = /--max[-_](semi|old)[-_]space[-_]size/.test(nodeOptions ?? '');
  if (namesHeapFlag) return { args: ['--expose-gc'], nodeOptions };
  const newSpace = Math.floor(memoryMb / 10);
  return {
    args: ['--expose-gc', `--max-semi-space-size=${Math.floor(newSpace / 2)}`, `--max-old-space-size=${memoryMb - newSpace}`],
    nodeOptions,
  };
}

/** The command line and NODE_OPTIONS of a run, as BENCHMARKS.md shows them. */
export function describeStart(start: LambdaNodeStart): string {
  return [start.nodeOptions === undefined ? '' : `NODE_OPTIONS='${start.nodeOptions}'`, 'node', ...start.args].filter(Boolean).join(' ');
}
