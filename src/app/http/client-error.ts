import type { Duplex } from 'node:stream';
import type { Services } from '../container.js';
import { API_HEADERS, HEADER, newRequestId } from '../../web/response-headers.js';
import { problemOf } from '../../web/problem.js';
import { PROBLEM_JSON } from './problem.js';

/**
 * Requests node's parser refuses before any handler runs (a method it does not know, a request
 * line or headers over 16 KiB) get a problem+json answer too, not an empty one; so do those node
 * gives up on (headers not in within HTTP_HEADERS_TIMEOUT_MS, the whole request within
 * HTTP_REQUEST_TIMEOUT_MS). Not a connection whose response has begun: as node itself, the
 * connection is then only closed, so that no answer is written into another.
 */
export function answerClientError(services: Services): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  const { headersTimeoutMs, requestTimeoutMs } = services.config.clientLimits;
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable || responseBegun(socket)) {
      socket.destroy();
      return;
    }
    const problem =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? problemOf('headers_too_large', 'the request line and headers are larger than 16 KiB', services.baseUrl())
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? problemOf('request_timeout', `the request did not arrive in time (its headers within ${headersTimeoutMs / 1000} s, all of it within ${requestTimeoutMs / 1000} s)`, services.baseUrl())
          : problemOf('bad_request', 'the request is not valid HTTP/1.1', services.baseUrl());
    const body = JSON.stringify(problem);
    // The headers every express answer carries, and a request id: this answer is a response too.
    const headers = [...API_HEADERS, [HEADER.requestId, newRequestId(services.ids)]].map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.end(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: ${PROBLEM_JSON}; charset=utf-8\r\n${headers}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}

/** Whether a response on the socket has sent its headers (node's own test before it answers a client error). */
function responseBegun(socket: Duplex): boolean {
  return (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage?.headersSent === true;
}
