import { expect } from 'chai';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { SECRET_PREFIX, SIGNING_STATEMENT, deliveryHeaders, newWebhookSecret } from '../../src/domain/webhooks/webhook-signing.js';

// The example of the Standard Webhooks spec and its reference libraries.
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: new Date(1614265330 * 1000),
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

/** A receiver's check of X-Service-Signature, by hand. */
const serviceSignatureOk = (secret: string, rawBody: string, header: string) =>
  timingSafeEqual(createHmac('sha256', secret).update(rawBody).digest(), Buffer.from(header, 'hex'));

describe('Webhook signing', () => {
  describe('When a webhook is registered', () => {
    it('gets a secret of 32 random bytes in the Standard Webhooks form', () => {
      const secret = newWebhookSecret();
      expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).to.have.length(32);
      expect(newWebhookSecret()).to.not.equal(secret);
      expect(newWebhookSecret(() => Buffer.alloc(32, 0xff))).to.equal(`whsec_${'/'.repeat(42)}8=`);
    });

    it('is told both schemes and what each one is keyed with', () => {
      expect(SIGNING_STATEMENT).to.contain('X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret string exactly as shown');
      expect(SIGNING_STATEMENT).to.contain('"{webhook-id}.{webhook-timestamp}.{raw body}"');
      expect(SIGNING_STATEMENT).to.contain('keyed with the base64-decoded part of the secret after whsec_');
    });
  });

  describe('When a delivery is signed', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"events":[],"sent_at":"2024-01-02T03:04:05.000Z","source":"scores-service","test":true}';
    const now = new Date();
    const headers = deliveryHeaders(secret, 'msg_1', now, body);

    it('puts the hex HMAC-SHA256 of the raw body, keyed with the whole secret string, in X-Service-Signature', () => {
      expect(headers['x-service-signature']).to.equal('275878dc0b956f90529f670cde0853eed6989555b8cf0d1dec0c23c890bdef9d');
      expect(headers['x-service-signature']).to.equal(createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex'));
    });

    it('gives the message id, the time in whole seconds and a JSON content type', () => {
      expect(headers['webhook-id']).to.equal('msg_1');
      expect(headers['webhook-timestamp']).to.equal(String(Math.floor(now.getTime() / 1000)));
      expect(headers['content-type']).to.equal('application/json');
    });

    it('signs the same bytes whether the body is a string or a buffer', () => {
      expect(deliveryHeaders(secret, 'msg_1', now, Buffer.from(body))).to.deep.equal(headers);
    });

    it('matches the Standard Webhooks example signature', () => {
      expect(deliveryHeaders(SPEC.secret, SPEC.id, SPEC.timestamp, SPEC.body)['webhook-signature']).to.equal(SPEC.signature);
    });

    it('verifies with the standardwebhooks library given the secret as shown', () => {
      expect(new Webhook(secret).verify(body, { ...headers })).to.deep.equal(JSON.parse(body));
    });

    it('signs a retry of the same message anew, under the same id', () => {
      const retry = deliveryHeaders(secret, 'msg_1', new Date(now.getTime() + 5_000), body);
      expect(retry['webhook-id']).to.equal(headers['webhook-id']);
      expect(retry['webhook-signature']).to.not.equal(headers['webhook-signature']);
      expect(retry['x-service-signature']).to.equal(headers['x-service-signature']);
    });
  });

  describe('When a delivery is tampered with', () => {
    const secret = newWebhookSecret();
    const body = '{"events":[{"type":"score_move"}]}';
    const now = new Date();
    const headers = deliveryHeaders(secret, 'msg_2', now, body);
    const verify = (b: string, h: Record<string, string>) => () => new Webhook(secret).verify(b, h);

    it('fails both verifications when the body changed', () => {
      const tampered = body.replace('score_move', 'score_movf');
      expect(serviceSignatureOk(secret, body, headers['x-service-signature'])).to.equal(true);
      expect(serviceSignatureOk(secret, tampered, headers['x-service-signature'])).to.equal(false);
      expect(verify(tampered, { ...headers })).to.throw('No matching signature');
    });

    it('fails when the timestamp changed', () => {
      expect(verify(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) })).to.throw('No matching signature');
    });

    it('fails when the id changed', () => {
      expect(verify(body, { ...headers, 'webhook-id': 'msg_3' })).to.throw('No matching signature');
    });

    it('fails both verifications with another secret', () => {
      const other = newWebhookSecret();
      expect(serviceSignatureOk(other, body, headers['x-service-signature'])).to.equal(false);
      expect(() => new Webhook(other).verify(body, { ...headers })).to.throw('No matching signature');
    });

    it('fails when replayed more than 5 minutes later', () => {
      const old = deliveryHeaders(secret, 'msg_2', new Date(now.getTime() - 6 * 60_000), body);
      expect(verify(body, { ...old })).to.throw('too old');
    });
  });

  describe('When the secret or the id is malformed', () => {
    it('refuses to sign rather than sign with a wrong key', () => {
      const sign = (secret: string, id = 'msg_1') => () => deliveryHeaders(secret, id, new Date(), '{}');
      expect(sign('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).to.throw(RangeError);
      expect(sign('whsec_')).to.throw(RangeError);
      expect(sign('whsec_MfKQ9r8GKYqrTwjUPD8I*LPZIo2LaLaSw')).to.throw(RangeError);
      expect(sign(SPEC.secret, '')).to.throw(RangeError);
    });
  });
});
