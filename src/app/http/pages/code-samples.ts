import { BASE_URL_PLACEHOLDER, CODE_SAMPLES, type CodeSample } from '../generated/docs.js';

type Json = Record<string, unknown>;

/**
 * The served OpenAPI document with each operation's `x-codeSamples` (Redoc shows them beside the
 * operation): curl today, written at build time from this same document by scripts/render-docs.mjs
 * (where the SDKs' samples are to be added, in `sdkSamples`), with this server's base URL. Only the
 * operations gain a key; the rest of the document is the one given.
 */
export function withCodeSamples(doc: Json, baseUrl: string): Json {
  const paths = doc['paths'] as Record<string, Record<string, Json>>;
  const withSamples = Object.fromEntries(
    Object.entries(paths).map(([path, ops]) => [
      path,
      Object.fromEntries(
        Object.entries(ops).map(([method, op]) => {
          const samples = CODE_SAMPLES[`${method.toUpperCase()} ${path}`];
          return [method, samples ? { ...op, 'x-codeSamples': samples.map((s) => served(s, baseUrl)) } : op];
        }),
      ),
    ]),
  );
  return { ...doc, paths: withSamples };
}

const served = (s: CodeSample, baseUrl: string): CodeSample => ({ ...s, source: s.source.replaceAll(BASE_URL_PLACEHOLDER, baseUrl) });
