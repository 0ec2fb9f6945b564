import * as os from 'node:os';

/** One target of issue 7 and what this run measured for it. */
export interface TargetResult {
  /** Stable id, e.g. `export.ratio.jsonl.100k`; the key of its cause-and-plan note. */
  id: string;
  what: string;
  /** The bound as written in the issue, e.g. `<= 1.3`. */
  bound: string;
  /** What was measured, or `not measured: <reason>`. */
  measured: string;
  pass: boolean;
}

/** One part of BENCHMARKS.md: its text and its targets. */
export interface SectionReport {
  title: string;
  /** The command that runs this section alone; empty for a section that measures nothing. */
  command: string;
  markdown: string;
  targets: TargetResult[];
  /** Why a missed target was missed and what to do, by target id (shown for misses only). */
  misses?: Record<string, string>;
}

export interface Machine {
  cpu: string;
  cores: number;
  memory: string;
  node: string;
  os: string;
  loadAtStart: string;
}

export function describeMachine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    loadAtStart: loadAverage(),
  };
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
}

/** A Markdown table; cells are escaped for `|`. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cell = (v: string | number) => String(v).replace(/\|/g, '\\|');
  return [
    `| ${header.map(cell).join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

export function renderReport(input: {
  machine: Machine;
  date: string;
  durationS: number;
  loadAtEnd: string;
  command: string;
  sections: SectionReport[];
  preface: string;
}): string {
  const { machine } = input;
  const targets = input.sections.flatMap((s) => s.targets);
  const missed = input.sections.flatMap((s) => s.targets.filter((t) => !t.pass).map((t) => ({ t, note: s.misses?.[t.id] })));
  const out: string[] = [
    '# Benchmarks',
    '',
    `Written by \`${input.command}\` (bench/run.ts) on ${input.date}, in ${Math.round(input.durationS)} s. Do not edit by hand: the`,
    'file is regenerated on every run; the findings and plans below live in bench/.',
    '',
    table(
      ['Machine', ''],
      [
        ['CPU', machine.cpu],
        ['Cores', machine.cores],
        ['Memory', machine.memory],
        ['Node.js', machine.node],
        ['OS', machine.os],
        ['Load average (1/5/15 min) at start', machine.loadAtStart],
        ['Load average at end', input.loadAtEnd],
      ],
    ),
    '',
    input.preface,
    '',
  ];
  for (const section of input.sections) {
    out.push(`## ${section.title}`, '', ...(section.command ? [`Command: \`${section.command}\``, ''] : []), section.markdown.trim(), '');
  }
  out.push(
    '## Targets',
    '',
    table(
      ['Target', 'Bound', 'Measured', 'Result'],
      targets.map((t) => [t.what, t.bound, t.measured, t.pass ? 'PASS' : 'MISS']),
    ),
    '',
  );
  if (missed.length > 0) {
    out.push('### Missed targets: cause and plan', '');
    // Targets that share a cause and plan (the same ratio at two sizes) are listed together, the note once.
    const groups = new Map<string, TargetResult[]>();
    for (const { t, note } of missed)
      groups.set(note ?? 'No cause recorded yet.', [...(groups.get(note ?? 'No cause recorded yet.') ?? []), t]);
    for (const [note, group] of groups) {
      out.push(`- ${group.map((t) => `**${t.what}** (${t.measured}; bound ${t.bound})`).join('; ')}.`, `  ${note}`);
    }
    out.push('');
  }
  out.push(`${targets.filter((t) => t.pass).length} of ${targets.length} targets met.`, '');
  return out.join('\n');
}
