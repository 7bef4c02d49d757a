import { expect } from 'chai';
import { parseInstantParam } from '../../queries/shared/instants.js';
import { ConfigError, loadConfig } from '../../src/app/config.js';

describe('Instant query parameters (since, as_known_at)', () => {
  const p = (v: string, round?: 'up' | 'down') => parseInstantParam('since', v, round);

  it('reads a date, an ISO instant with a zone, and the restated_at timestamp form, as UTC instants', () => {
    expect(p('2019-06-14')).to.equal('2019-06-14T00:00:00.000Z');
    expect(p('2019-06-14T22:00:00+02:00')).to.equal('2019-06-14T20:00:00.000Z');
    expect(p('2019-06-14 22:00:00')).to.equal('2019-06-14T22:00:00.000Z');
    // An unencoded "+" arrives as a space.
    expect(p('2019-06-14T22:00:00 02:00')).to.equal('2019-06-14T20:00:00.000Z');
  });

  it('reads every RFC 3339 date-time (the form the OpenAPI document declares): any fraction, an hour-only offset, a leap second', () => {
    expect(p('2019-06-14T22:00:00.123456789012Z')).to.equal('2019-06-14T22:00:00.123Z');
    expect(p('2019-06-15T00:00:00+02')).to.equal('2019-06-14T22:00:00.000Z');
    // A leap second lies between the minute's last millisecond and the next minute.
    expect(p('2016-12-31T23:59:60Z', 'down')).to.equal('2016-12-31T23:59:59.999Z');
    expect(p('2016-12-31T23:59:60Z', 'up')).to.equal('2017-01-01T00:00:00.000Z');
    expect(() => p('2016-12-31T23:59:61Z')).to.throw(/since must be/);
  });

  it('keeps milliseconds, rounding a finer value up for a lower bound and down for an upper one', () => {
    expect(p('2019-06-14T22:00:46.0009Z', 'up')).to.equal('2019-06-14T22:00:46.001Z');
    expect(p('2019-06-14T22:00:46.0009Z', 'down')).to.equal('2019-06-14T22:00:46.000Z');
    expect(p('2019-06-14T22:00:46.000000Z', 'up')).to.equal('2019-06-14T22:00:46.000Z');
    expect(p('2019-06-14T22:00:46.999999Z', 'up')).to.equal('2019-06-14T22:00:47.000Z');
  });

  it('reads years 0000-0099 as themselves and refuses an instant an offset carries past 9999', () => {
    expect(p('0050-06-01')).to.equal('0050-06-01T00:00:00.000Z');
    expect(() => p('9999-12-31T23:59:59-00:01')).to.throw(/since must be a date YYYY-MM-DD, .* or an ISO 8601 instant with a zone/);
    expect(p('9999-12-31T23:59:59Z')).to.equal('9999-12-31T23:59:59.000Z');
  });

  it('refuses what is no instant, an empty value included (the document admits none), and takes absent as absent', () => {
    for (const bad of ['yesterday', '2019-02-30', '2019-06-14T24:00:00Z', '2019-06-14T22:00:00+25:00', '1', '', ' ']) {
      expect(() => p(bad), JSON.stringify(bad)).to.throw(/since must be/);
    }
    expect(parseInstantParam('since', undefined)).to.equal(undefined);
  });

  it('refuses a time without a zone, as SCORES_NOW does, with the same reason', () => {
    // Read as UTC here and in the host's zone by Date.parse, such a text names two instants.
    for (const text of ['2024-03-01T00:00:00', '2024-03-01T00:00', '2024-03-01T00:00:00.5', '2024-03-01 00:00']) {
      let query = '';
      let config = '';
      try {
        parseInstantParam('as_known_at', text);
      } catch (err) {
        query = (err as Error).message;
      }
      try {
        loadConfig({ SCORES_NOW: text });
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        config = (err as Error).message;
      }
      const reason = 'an ISO 8601 instant with a zone, e.g. 2024-03-15T12:00:00Z';
      expect(query, text).to.contain(`as_known_at must be a date YYYY-MM-DD, a restated_at value YYYY-MM-DD HH:MM:SS (UTC), or ${reason}`);
      expect(config, text).to.contain(`SCORES_NOW: must be ${reason}`);
      if (text.includes('T')) {
        // The same words for the same fault.
        const why = `${text} has no zone (add Z for UTC, or an offset such as +01:00)`;
        expect(query, text).to.contain(why);
        expect(config, text).to.contain(why);
      }
    }
    // The restated_at form is the service's own UTC timestamp: accepted by the query, not by SCORES_NOW.
    expect(parseInstantParam('since', '2024-03-01 00:00:00')).to.equal('2024-03-01T00:00:00.000Z');
    expect(() => loadConfig({ SCORES_NOW: '2024-03-01 00:00:00' })).to.throw(ConfigError, /has no zone/);
  });
});
