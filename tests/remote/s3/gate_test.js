// The harness's own test (ctest remote.s3_gate): Amazon's client, @aws-sdk/client-s3,
// against gate.js, to show that the gate answers as S3 does before any onnxz test relies
// on it. Run: NODE_PATH=DIR/node_modules node --test gate_test.js (DIR: install.sh's).
'use strict';

const assert = require('assert');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const test = require('node:test');
const {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand,
  GetBucketLocationCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand,
  ListObjectsV2Command, ListPartsCommand, PutObjectCommand, UploadPartCommand,
} = require('@aws-sdk/client-s3');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');
const { ACCOUNTS, startGate, client } = require('./harness');

const WORK = process.env.S3_GATE_WORK || fs.mkdtempSync(path.join(os.tmpdir(), 's3gate-'));
const MiB = 1024 * 1024;
let gate;
let s3;

const bytes = (n, seed) => {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
};
const body = async r => Buffer.from(await r.Body.transformToByteArray());
// The S3 error the SDK raised: [name, HTTP status]
const failure = async promise => {
  try {
    await promise;
  } catch (e) {
    return [e.name, e.$metadata && e.$metadata.httpStatusCode, e];
  }
  assert.fail('the request succeeded');
};

// A raw HTTP request (for what the SDK will not send), optionally signed by the SDK's signer.
async function raw(method, pathAndQuery, { headers = {}, data, sign, signBody } = {}) {
  const url = new URL(gate.endpoint + pathAndQuery);
  headers = { host: url.host, ...headers };
  if (sign) {
    const query = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const signer = new SignatureV4({
      credentials: { accessKeyId: sign.key_id, secretAccessKey: sign.secret, sessionToken: sign.token },
      region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false,
    });
    const signed = await signer.sign({
      method, protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname,
      query, headers, body: signBody !== undefined ? signBody : data,
    });
    headers = signed.headers;
  }
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers }, res => {
      const chunks = [];
      res.on('data', c => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (data !== undefined && headers['transfer-encoding'] === 'chunked') {
      req.write(data);
      req.end();
    } else {
      req.end(data);
    }
  });
}

test.before(async () => {
  gate = await startGate(WORK);
  s3 = client(gate.endpoint, ACCOUNTS.main);
});
test.after(async () => {
  if (gate) await gate.stop();
});

test('put, get whole and by range, head, list: the bytes the SDK put', async () => {
  const data = bytes(100000, 1);
  await s3.send(new PutObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin', Body: data }));
  assert.deepStrictEqual(await body(await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' }))), data);
  const mark = gate.requests().length;
  const r = await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin', Range: 'bytes=1000-1999' }));
  assert.strictEqual(r.ContentRange, 'bytes 1000-1999/100000');
  assert.deepStrictEqual(await body(r), data.subarray(1000, 2000));
  const logged = gate.requests().slice(mark);
  assert.strictEqual(logged.length, 1);
  assert.deepStrictEqual([logged[0].method, logged[0].range, logged[0].status, logged[0].bytes_sent],
    ['GET', 'bytes=1000-1999', 206, 1000]);
  // a suffix range: the last N bytes (s3rver alone answers bytes=0-N), all when N is larger
  const tail = await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin', Range: 'bytes=-300' }));
  assert.strictEqual(tail.ContentRange, 'bytes 99700-99999/100000');
  assert.deepStrictEqual(await body(tail), data.subarray(99700));
  const all = await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin', Range: 'bytes=-200000' }));
  assert.strictEqual(all.ContentRange, 'bytes 0-99999/100000');
  assert.deepStrictEqual(await body(all), data);
  assert.deepStrictEqual((await failure(s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin', Range: 'bytes=100000-' })))).slice(0, 2),
    ['InvalidRange', 416]);
  const head = await s3.send(new HeadObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' }));
  assert.strictEqual(head.ContentLength, 100000);
  const list = await s3.send(new ListObjectsV2Command({ Bucket: 'models', Prefix: 'dir/' }));
  assert.deepStrictEqual(list.Contents.map(c => c.Key), ['dir/a model+x.bin']);
});

test('a wrong secret: 403 SignatureDoesNotMatch, with S3 canonical request and no secret', async () => {
  const bad = client(gate.endpoint, { ...ACCOUNTS.main, secret: 'not-the-secret' });
  const [name, status] = await failure(bad.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' })));
  assert.deepStrictEqual([name, status], ['SignatureDoesNotMatch', 403]);
  const r = await raw('GET', '/models/dir/a%20model%2Bx.bin', { sign: { ...ACCOUNTS.main, secret: 'not-the-secret' } });
  assert.strictEqual(r.status, 403);
  assert.match(r.text, /<Code>SignatureDoesNotMatch<\/Code>/);
  assert.match(r.text, /<CanonicalRequest>GET\n\/models\/dir\/a%20model%2Bx.bin\n/);
  assert.ok(!r.text.includes(ACCOUNTS.main.secret));
  // the same request with the right secret passes: the check is the signature, not the path
  assert.strictEqual((await raw('GET', '/models/dir/a%20model%2Bx.bin', { sign: ACCOUNTS.main })).status, 200);
});

test('an unknown key id: 403 InvalidAccessKeyId; no signature: 403 AccessDenied', async () => {
  const stranger = client(gate.endpoint, { key_id: 'AKIAUNKNOWN000000000', secret: 'x' });
  assert.deepStrictEqual((await failure(stranger.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' })))).slice(0, 2),
    ['InvalidAccessKeyId', 403]);
  const r = await raw('GET', '/models/dir/a%20model%2Bx.bin');
  assert.strictEqual(r.status, 403);
  assert.match(r.text, /<Code>AccessDenied<\/Code>/);
});

test('a session token: accepted; the expired one: 400 ExpiredToken; a wrong one: InvalidToken', async () => {
  const temp = client(gate.endpoint, ACCOUNTS.temp);
  assert.strictEqual((await temp.send(new HeadObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' }))).ContentLength, 100000);
  const expired = client(gate.endpoint, ACCOUNTS.expired);
  const r = await raw('GET', '/models/dir/a%20model%2Bx.bin', { sign: ACCOUNTS.expired });
  assert.strictEqual(r.status, 400);
  assert.match(r.text, /<Code>ExpiredToken<\/Code><Message>The provided token has expired.<\/Message>/);
  assert.deepStrictEqual((await failure(expired.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' })))).slice(0, 2),
    ['ExpiredToken', 400]);
  const forged = client(gate.endpoint, { ...ACCOUNTS.temp, token: 'forged' });
  assert.deepStrictEqual((await failure(forged.send(new GetObjectCommand({ Bucket: 'models', Key: 'dir/a model+x.bin' })))).slice(0, 2),
    ['InvalidToken', 400]);
});

test('the body must be the signed x-amz-content-sha256; x-amz-* headers must be signed', async () => {
  const signed = Buffer.from('the signed body');
  const sha = crypto.createHash('sha256').update(signed).digest('hex');
  let r = await raw('PUT', '/models/tampered', {
    sign: ACCOUNTS.main, headers: { 'x-amz-content-sha256': sha, 'content-length': '15' },
    data: Buffer.from('a bodies swap!!'),
  });
  assert.strictEqual(r.status, 400);
  assert.match(r.text, /<Code>XAmzContentSHA256Mismatch<\/Code>/);
  r = await raw('GET', '/models/dir/a%20model%2Bx.bin', { sign: ACCOUNTS.main });
  assert.strictEqual(r.status, 200);
  // a header added after signing
  const url = '/models/dir/a%20model%2Bx.bin';
  const signer = new SignatureV4({ credentials: { accessKeyId: ACCOUNTS.main.key_id, secretAccessKey: ACCOUNTS.main.secret },
    region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false });
  const host = new URL(gate.endpoint).host;
  const s = await signer.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', path: url, query: {}, headers: { host } });
  r = await new Promise(resolve => http.get(gate.endpoint + url, { headers: { ...s.headers, 'x-amz-meta-late': '1' } }, res => {
    let t = '';
    res.on('data', c => { t += c; });
    res.on('end', () => resolve({ status: res.statusCode, text: t }));
  }));
  assert.strictEqual(r.status, 403);
  assert.match(r.text, /<HeadersNotSigned>x-amz-meta-late<\/HeadersNotSigned>/);
});

test('PUT without Content-Length: 411 MissingContentLength', async () => {
  const r = await raw('PUT', '/models/chunked', {
    sign: ACCOUNTS.main, headers: { 'transfer-encoding': 'chunked', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }, data: 'abc',
  });
  assert.strictEqual(r.status, 411);
  assert.match(r.text, /<Code>MissingContentLength<\/Code>/);
  assert.deepStrictEqual((await failure(s3.send(new HeadObjectCommand({ Bucket: 'models', Key: 'chunked' })))).slice(0, 2), ['NotFound', 404]);
});

test('multipart: create, upload, list uploads and parts, complete; the object is the parts', async () => {
  const parts = [bytes(5 * MiB, 2), bytes(5 * MiB, 3), bytes(12345, 4)];
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'models', Key: 'big.onnxz' }));
  const etags = [];
  for (const [i, p] of parts.entries()) {
    etags.push((await s3.send(new UploadPartCommand({ Bucket: 'models', Key: 'big.onnxz', UploadId, PartNumber: i + 1, Body: p }))).ETag);
  }
  const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: 'models' }));
  assert.deepStrictEqual(listed.Uploads.map(u => [u.Key, u.UploadId]), [['big.onnxz', UploadId]]);
  const lp = await s3.send(new ListPartsCommand({ Bucket: 'models', Key: 'big.onnxz', UploadId }));
  assert.deepStrictEqual(lp.Parts.map(p => [p.PartNumber, p.Size, p.ETag]), parts.map((p, i) => [i + 1, p.length, etags[i]]));
  // not yet there
  assert.strictEqual((await failure(s3.send(new HeadObjectCommand({ Bucket: 'models', Key: 'big.onnxz' }))))[1], 404);
  // parts out of order, and a wrong ETag, are refused
  assert.strictEqual((await failure(s3.send(new CompleteMultipartUploadCommand({
    Bucket: 'models', Key: 'big.onnxz', UploadId,
    MultipartUpload: { Parts: [{ PartNumber: 2, ETag: etags[1] }, { PartNumber: 1, ETag: etags[0] }] },
  }))))[0], 'InvalidPartOrder');
  assert.strictEqual((await failure(s3.send(new CompleteMultipartUploadCommand({
    Bucket: 'models', Key: 'big.onnxz', UploadId,
    MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"0123456789abcdef0123456789abcdef"' }] },
  }))))[0], 'InvalidPart');
  await s3.send(new CompleteMultipartUploadCommand({
    Bucket: 'models', Key: 'big.onnxz', UploadId,
    MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) },
  }));
  assert.deepStrictEqual(await body(await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'big.onnxz' }))), Buffer.concat(parts));
  assert.strictEqual((await s3.send(new ListMultipartUploadsCommand({ Bucket: 'models' }))).Uploads, undefined);
  assert.strictEqual((await failure(s3.send(new UploadPartCommand({ Bucket: 'models', Key: 'big.onnxz', UploadId, PartNumber: 4, Body: 'x' }))))[0],
    'NoSuchUpload');
});

test('multipart: a part under 5 MiB but the last: EntityTooSmall; abort leaves nothing', async () => {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'models', Key: 'small.onnxz' }));
  const etags = [];
  for (const n of [1, 2]) {
    etags.push((await s3.send(new UploadPartCommand({ Bucket: 'models', Key: 'small.onnxz', UploadId, PartNumber: n, Body: bytes(1000, n) }))).ETag);
  }
  const [name, status, e] = await failure(s3.send(new CompleteMultipartUploadCommand({
    Bucket: 'models', Key: 'small.onnxz', UploadId,
    MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) },
  })));
  assert.deepStrictEqual([name, status, e.MinSizeAllowed, e.ProposedSize], ['EntityTooSmall', 400, String(5 * MiB), '1000']);
  assert.strictEqual((await s3.send(new ListMultipartUploadsCommand({ Bucket: 'models', Prefix: 'small' }))).Uploads.length, 1);
  await s3.send(new AbortMultipartUploadCommand({ Bucket: 'models', Key: 'small.onnxz', UploadId }));
  assert.strictEqual((await s3.send(new ListMultipartUploadsCommand({ Bucket: 'models' }))).Uploads, undefined);
  assert.strictEqual((await failure(s3.send(new AbortMultipartUploadCommand({ Bucket: 'models', Key: 'small.onnxz', UploadId }))))[0], 'NoSuchUpload');
  assert.strictEqual((await failure(s3.send(new HeadObjectCommand({ Bucket: 'models', Key: 'small.onnxz' }))))[1], 404);
  // s3rver's own files of the upload are gone too
  const uploadsDir = path.join(WORK, 'store', 'models');
  const leftovers = fs.readdirSync(uploadsDir, { recursive: true }).filter(f => f.includes(UploadId));
  assert.deepStrictEqual(leftovers, []);
  // a single part under 5 MiB is fine: it is the last
  const one = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'models', Key: 'one.bin' }));
  const { ETag } = await s3.send(new UploadPartCommand({ Bucket: 'models', Key: 'one.bin', UploadId: one.UploadId, PartNumber: 1, Body: 'tiny' }));
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'models', Key: 'one.bin', UploadId: one.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag }] } }));
  assert.strictEqual((await body(await s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'one.bin' })))).toString(), 'tiny');
});

test('a checksum the body does not have: 400 BadDigest', async () => {
  const r = await raw('PUT', '/models/sum', {
    sign: ACCOUNTS.main, data: 'abc', headers: { 'content-length': '3', 'x-amz-checksum-crc32': 'AAAAAA==' },
  });
  assert.strictEqual(r.status, 400);
  assert.match(r.text, /<Code>BadDigest<\/Code>/);
  const ok = await raw('PUT', '/models/sum', {
    sign: ACCOUNTS.main, data: 'abc', headers: { 'content-length': '3', 'x-amz-checksum-crc32': 'NSRBwg==' },
  });
  assert.strictEqual(ok.status, 200);
});

test('a bucket in another region: 301 PermanentRedirect with x-amz-bucket-region; its own region reads', async () => {
  const eu = client(gate.endpoint, ACCOUNTS.main, 'eu-west-1');
  await eu.send(new PutObjectCommand({ Bucket: 'eu-models', Key: 'm.onnx', Body: 'eu bytes' }));
  assert.strictEqual((await body(await eu.send(new GetObjectCommand({ Bucket: 'eu-models', Key: 'm.onnx' })))).toString(), 'eu bytes');
  const [name, status, e] = await failure(s3.send(new GetObjectCommand({ Bucket: 'eu-models', Key: 'm.onnx' })));
  assert.deepStrictEqual([name, status, e.$response && e.$response.headers['x-amz-bucket-region']], ['PermanentRedirect', 301, 'eu-west-1']);
  const r = await raw('HEAD', '/eu-models/m.onnx', { sign: ACCOUNTS.main });
  assert.deepStrictEqual([r.status, r.headers['x-amz-bucket-region'], r.text], [301, 'eu-west-1', '']);
  const loc = await s3.send(new GetBucketLocationCommand({ Bucket: 'eu-models' }));
  assert.strictEqual(loc.LocationConstraint, 'eu-west-1');
});

test('missing key and bucket: 404 NoSuchKey, NoSuchBucket', async () => {
  assert.deepStrictEqual((await failure(s3.send(new GetObjectCommand({ Bucket: 'models', Key: 'nothing.onnx' })))).slice(0, 2), ['NoSuchKey', 404]);
  assert.deepStrictEqual((await failure(s3.send(new GetObjectCommand({ Bucket: 'no-such-bucket', Key: 'x.onnx' })))).slice(0, 2), ['NoSuchBucket', 404]);
  const mark = gate.requests().length;
  const r = await raw('GET', '/no-such-bucket/x.onnx', { sign: ACCOUNTS.main });
  assert.match(r.text, /<Code>NoSuchBucket<\/Code>/);
  assert.strictEqual((await raw('GET', '/models/nothing.onnx', { sign: ACCOUNTS.main })).status, 404);
  assert.deepStrictEqual(gate.requests().slice(mark).map(r => [r.status, r.code]), [[404, 'NoSuchBucket'], [404, 'NoSuchKey']]);
});

test('a public bucket: anyone reads, nobody writes unsigned; a private one: 403 unsigned', async () => {
  await s3.send(new PutObjectCommand({ Bucket: 'public-models', Key: 'open.onnx', Body: 'open bytes' }));
  const anon = await raw('GET', '/public-models/open.onnx', { headers: { range: 'bytes=5-9' } });
  assert.deepStrictEqual([anon.status, anon.text], [206, 'bytes']);
  const put = await raw('PUT', '/public-models/x', { data: 'x', headers: { 'content-length': '1' } });
  assert.strictEqual(put.status, 403);
  assert.strictEqual((await raw('GET', '/models/one.bin')).status, 403);
  const logged = gate.requests().filter(r => r.path === '/public-models/open.onnx' && r.auth === 'anonymous');
  assert.strictEqual(logged.length, 1);
});

test('the gate exits when its stdin closes: no orphan once a test dies', async () => {
  const other = await startGate(path.join(WORK, 'orphan'));
  const exited = new Promise(resolve => other.proc.on('exit', resolve));
  other.proc.stdin.end();
  await exited;
  await assert.rejects(new Promise((resolve, reject) => {
    http.get(other.endpoint + '/', resolve).on('error', reject);
  }));
});
