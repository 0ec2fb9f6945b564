import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { EXPORT_EVENT_SOURCE } from '../../core/exports/pipeline/export-events';
import { requiredEnv } from '../../core/shared/env';
import { EventBridgePublisher } from './eventbridge-publisher';
import type { AwsExportRuntime } from './export-runtime';

/** The export events' bus. */
export function exportEvents(runtime: AwsExportRuntime): EventBridgePublisher {
  return runtime.once(
    'events',
    () =>
      new EventBridgePublisher({
        client: new EventBridgeClient({}),
        eventBusName: requiredEnv(runtime.config.eventBusName, 'EXPORT_EVENT_BUS_NAME'),
        source: EXPORT_EVENT_SOURCE,
      }),
  );
}
