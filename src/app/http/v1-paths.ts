import type { RequestHandler } from 'express';
import type { Services } from '../container.js';
import { HEADER } from '../../web/response-headers.js';
import { problemOf } from '../../web/problem.js';
import { methodsByRoute } from './openapi.js';
import { sendProblem } from './problem.js';

/**
 * The document's spelling of a /v1 path, read case-insensitively and without a trailing slash:
 * the declared literal segments with the request's parameter values, or null when no declared
 * path matches even so (an unknown path). Literal segments beat parameters, so `/v1/scores/HISTORY`
 * is `/v1/scores/history`, not the ticker route (which it matches as sent); between two equally
 * literal readings, the one spelt as sent.
 */
function canonicalV1Path(path: string, routes: readonly { route: string }[]): string | null {
  const given = path.replace(/\/$/, '').split('/');
  let best: { path: string; literals: number } | null = null;
  for (const { route } of routes) {
    const declared = route.split('/');
    if (declared.length !== given.length) continue;
    let literals = 0;
    const out: string[] = [];
    for (const [i, seg] of declared.entries()) {
      const sent = given[i]!;
      if (seg.startsWith(':')) {
        out.push(sent);
      } else if (seg.toLowerCase() === sent.toLowerCase()) {
        out.push(seg);
        literals++;
      } else break;
    }
    const candidate = out.join('/');
    if (out.length === declared.length && (!best || literals > best.literals || (literals === best.literals && candidate === path))) best = { path: candidate, literals };
  }
  return best?.path ?? null;
}

/** What a /v1 path answers: the methods its declared route takes, or the 404's hint. */
type Verdict = { allowed: readonly string[] } | { hint: string };

/** Paths judged kept at most (then forgotten, all at once): a flood of random paths cannot grow memory. */
const MAX_JUDGED_PATHS = 10_000;

/**
 * Every /v1 path answers the methods the OpenAPI document declares for it, and no other: HEAD
 * would run (and charge) the whole call for headers alone; other methods would fall through to
 * a 404 for a path that exists. Mounted without a path, which would match case-sensitively:
 * `/V1/USAGE` is a /v1 path spelt otherwise. A path's verdict depends on the path alone, so it is
 * worked out once per path (every route's pattern and the canonical spelling), not per call.
 */
export function v1PathsAndMethods(services: Services, openapi: Record<string, unknown>): RequestHandler {
  const v1Routes = [...methodsByRoute(openapi)].map(([p, methods]) => ({ route: p, exact: new RegExp(`^${p.replace(/:[^/]+/g, '[^/]+')}$`), methods }));
  const judged = new Map<string, Verdict>();
  const verdictOf = (path: string): Verdict => {
    let verdict = judged.get(path);
    if (verdict) return verdict;
    verdict = judge(path, v1Routes);
    if (judged.size >= MAX_JUDGED_PATHS) judged.clear();
    judged.set(path, verdict);
    return verdict;
  };
  return (req, res, next) => {
    const url = req.originalUrl;
    const query = url.indexOf('?');
    const path = query < 0 ? url : url.slice(0, query);
    if (!/^\/v1(\/|$)/i.test(path)) return next();
    const verdict = verdictOf(path);
    if ('hint' in verdict) return sendProblem(res, problemOf('not_found', `no route for ${req.method} ${path}${verdict.hint}`, services.baseUrl()));
    const { allowed } = verdict;
    if (req.method !== 'HEAD' && allowed.includes(req.method)) return next();
    res.setHeader(HEADER.allow, allowed.join(', '));
    const why = req.method === 'HEAD' ? ': a HEAD would be charged for data it does not deliver' : '';
    sendProblem(res, problemOf('method_not_allowed', `${req.method} is not served here; this /v1 endpoint answers ${allowed.join(', ')}${why}`, services.baseUrl()));
  };
}

/**
 * One spelling per path, the document's, named in the 404. A case variant of a literal segment
 * can match a parameter as sent (`/v1/scores/HISTORY`, the ticker route): refused as well.
 */
function judge(path: string, v1Routes: readonly { route: string; exact: RegExp; methods: readonly string[] }[]): Verdict {
  const matched = v1Routes.filter((r) => r.exact.test(path));
  const canonical = canonicalV1Path(path, v1Routes);
  if (matched.length === 0 || canonical !== path) {
    return { hint: canonical ? `; the path is ${canonical} (paths are case-sensitive, without a trailing slash)` : '' };
  }
  return { allowed: [...new Set(matched.flatMap((r) => r.methods))].sort() };
}
