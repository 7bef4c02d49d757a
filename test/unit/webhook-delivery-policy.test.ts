import { expect } from 'chai';
import { ATTEMPT_DELAYS_MS, MAX_ATTEMPTS, classifyAttempt, isDelivered, nextAttemptAt, shouldDeactivate } from '../../src/domain/webhooks/delivery-policy.js';

const t0 = new Date('2024-03-01T12:00:00Z');
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms);
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('Webhook delivery policy', () => {
  describe('When a receiver answers 2xx', () => {
    it('the message is delivered and the webhook stays active', () => {
      for (const status of [200, 201, 202, 204, 299]) expect(isDelivered(status), String(status)).to.equal(true);
      expect(classifyAttempt({ ok: true, status_code: 204 })).to.deep.equal({ ok: true, deactivate: false });
    });
  });

  describe('When a receiver answers 410', () => {
    it('the attempt fails and the webhook is deactivated at once', () => {
      expect(isDelivered(410)).to.equal(false);
      expect(classifyAttempt({ ok: false, status_code: 410 })).to.deep.equal({ ok: false, deactivate: true });
    });
  });

  describe('When a receiver answers anything else', () => {
    it('a redirect fails, since redirects are never followed', () => {
      for (const status of [301, 302, 303, 307, 308]) expect(isDelivered(status), String(status)).to.equal(false);
    });

    it('a 1xx, 4xx other than 410 or 5xx fails without deactivating', () => {
      for (const status of [100, 199, 300, 400, 401, 404, 409, 429, 500, 502, 503]) {
        expect(isDelivered(status), String(status)).to.equal(false);
        expect(classifyAttempt({ ok: false, status_code: status })).to.deep.equal({ ok: false, deactivate: false });
      }
    });
  });

  describe('When no answer comes', () => {
    it('a time-out, a connection, TLS or address error fails without deactivating', () => {
      expect(classifyAttempt({ ok: false, status_code: null })).to.deep.equal({ ok: false, deactivate: false });
    });
  });

  describe('When attempts of a message fail', () => {
    it('makes 8 attempts: at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure', () => {
      expect(MAX_ATTEMPTS).to.equal(8);
      expect(ATTEMPT_DELAYS_MS).to.deep.equal([0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]);
      const waits = [1, 2, 3, 4, 5, 6, 7].map((n) => nextAttemptAt(n, t0)!.getTime() - t0.getTime());
      expect(waits).to.deep.equal([5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]);
    });

    it('counts each wait from the failure before it', () => {
      expect(nextAttemptAt(3, new Date('2024-03-01T12:07:00.250Z'))).to.deep.equal(new Date('2024-03-01T12:37:00.250Z'));
    });

    it('gives the message up after the 8th failure', () => {
      expect(nextAttemptAt(8, t0)).to.equal(null);
      expect(nextAttemptAt(9, t0)).to.equal(null);
    });

    it('spans about 27.6 hours when every attempt fails at once', () => {
      let at = t0;
      for (let n = 1; n < MAX_ATTEMPTS; n++) at = nextAttemptAt(n, at)!;
      expect(at.getTime() - t0.getTime()).to.equal(27 * HOUR + 35 * MINUTE + 5 * SECOND);
    });

    it('refuses an attempt number below 1 or not whole', () => {
      expect(() => nextAttemptAt(0, t0)).to.throw(RangeError);
      expect(() => nextAttemptAt(1.5, t0)).to.throw(RangeError);
    });
  });

  describe('When a webhook keeps failing', () => {
    it('stays active until 5 days after its first failure in the run', () => {
      expect(shouldDeactivate(t0, plus(t0, 5 * DAY - 1))).to.equal(false);
    });

    it('is deactivated from 5 days after that failure', () => {
      expect(shouldDeactivate(t0, plus(t0, 5 * DAY))).to.equal(true);
      expect(shouldDeactivate(t0, plus(t0, 9 * DAY))).to.equal(true);
    });

    it('is not deactivated when its last attempt succeeded (no run of failures)', () => {
      expect(shouldDeactivate(null, plus(t0, 30 * DAY))).to.equal(false);
    });
  });
});
