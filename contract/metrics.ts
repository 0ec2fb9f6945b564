/**
 * The CloudWatch metrics the functions emit (EMF) and the alarms watch. Both sides read these:
 * a renamed metric or dimension would otherwise leave an alarm watching a metric nobody writes,
 * which never fires (missing data is "not breaching").
 */

/** Every acctops metric lives in this namespace. */
export const METRICS_NAMESPACE = 'Acctops';

/** Dimension names: every metric carries Stage and Function (the handlerDir); check-health adds Probe. */
export const METRIC_DIMENSIONS = { stage: 'Stage', function: 'Function', probe: 'Probe' } as const;

/** A metric an alarm watches: its name and the function (handlerDir) that emits it. */
export interface AlarmedMetric {
  readonly name: string;
  readonly function: string;
}

/** The metrics the stack's alarms watch, by the function that emits each. */
export const ALARMED_METRICS = {
  exportFailed: { name: 'ExportFailed', function: 'export-period' },
  exportStaleSymlinks: { name: 'ExportStaleSymlinks', function: 'export-period' },
  monthlyExportsOverdue: { name: 'MonthlyExportsOverdue', function: 'check-monthly-export' },
  webhookUnavailable: { name: 'WebhookUnavailable', function: 'receive-export-webhook' },
  webhookRejected: { name: 'WebhookRejected', function: 'receive-export-webhook' },
  tokenNeedsAttention: { name: 'TokenNeedsAttention', function: 'refresh-tokens' },
  tokenRefreshDeferred: { name: 'TokenRefreshDeferred', function: 'refresh-tokens' },
  tokensOverdue: { name: 'TokensOverdue', function: 'plan-token-refresh' },
  unrepairedRotationFindings: { name: 'UnrepairedRotationFindings', function: 'check-key-rotations' },
  probeFailed: { name: 'ProbeFailed', function: 'check-health' },
} as const satisfies Record<string, AlarmedMetric>;

/** The probes of check-health; `ProbeFailed` carries one of these as its Probe dimension. */
export const HEALTH_PROBES = {
  institutionCredential: 'institution-credential-readable',
  service: 'service-reachable',
} as const;
