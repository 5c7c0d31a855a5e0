/** The failure domain a holder is admitted with: `region/az/host` of its site. */
export function failureDomainOf(site: { readonly region: string; readonly az: string; readonly host: string }): string {
  return `${site.region}/${site.az}/${site.host}`;
}

/** Whether a holder admitted with `failureDomain` lies inside `domain` (itself, or a zone or region above it). */
export function inFailureDomain(failureDomain: string, domain: string): boolean {
  return failureDomain === domain || failureDomain.startsWith(`${domain}/`);
}
