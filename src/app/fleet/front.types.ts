/** The fleet's front: one base URL over its API processes, a caller's calls to one of them (key-routing.ts). */
export interface Front {
  url: string;
  /** An API process that joins once listening (the fleet serves through the first while the others start); resolves once it is routed to. */
  add(target: string): Promise<void>;
  /** Stops the front (its health checks, its listener, its process). */
  close(): Promise<void>;
}
