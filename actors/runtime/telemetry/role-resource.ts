import type { Resource } from "@opentelemetry/resources";
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { otelResources } from "./otel-packages.ts";

/** A role process's OpenTelemetry service name: `custody-<role>` (the same name `custody ps` lists). */
export function roleServiceName(role: string): string {
  return `custody-${role}`;
}

/**
 * The resource every signal of a role process carries (its metrics and its traces): `service.name`
 * `custody-<role>`, `service.instance.id` the role's id (holder, writer, controller id, ...), over
 * the SDK's defaults. Without it a process reports `unknown_service:node`.
 */
export function roleResource(role: string, id: string): Resource {
  const { defaultResource, resourceFromAttributes } = otelResources();
  return defaultResource().merge(
    resourceFromAttributes({ [ATTR_SERVICE_NAME]: roleServiceName(role), [ATTR_SERVICE_INSTANCE_ID]: id }),
  );
}
