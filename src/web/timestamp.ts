/** `YYYY-MM-DD HH:MM:SS` (UTC) of an ISO instant: the API's timestamp format (the spec's `restated_at`). */
export function timestampOf(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}
