/** The server could not listen (address in use, no permission): nothing was served. */
export class ListenError extends Error {}
