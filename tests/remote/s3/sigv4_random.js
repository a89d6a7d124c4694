// sigv4_random.js SIGNER [COUNT] - libonnxcore's SigV4 (tests/unit/sigv4_sign.c, SIGNER)
// against the AWS SDK's own signer, @smithy/signature-v4 (the one @aws-sdk/client-s3
// signs with), over COUNT generated requests (default 3000, from a fixed seed): object
// keys with blanks, unicode, '+', '~', '%', '*', empty and dot segments; query parameters
// with reserved bytes, unicode and empty values; extra headers with runs of blanks; session
// tokens; regions and dates. The path is given to the SDK as its S3 client builds it (each
// key segment escaped, uriEscapePath false), and to ours as the key's bytes. Every
// Authorization header must be byte-for-byte the same. Exit 0 when all are.
'use strict';
const { execFileSync } = require('child_process');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

const signer = process.argv[2];
const count = Number(process.argv[3] || 3000);

// A fixed-seed generator (mulberry32): the same requests in every run.
let seed = 0x5eed5;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const KEY_PIECES = ['a', 'Z', '0', ' ', '+', '~', '%', '*', '-', '_', '.', '!', "'", '(', ')',
  '$', '&', ',', ';', '=', ':', '@', '?', '#', '[', ']', 'é', 'ß', 'ሴ', '日本', '😀', 'model',
  'onnx', '\u00a0', '..', '//'];
const QUERY_PIECES = ['a', 'B', '1', ' ', '+', '~', '%', '/', '=', '&', '*', 'é', 'ሴ', '-',
  '.', '_', 'uploads', 'partNumber', 'x'];
const VALUE_CHARS = 'abcXYZ019 -_.~:;/+=,()"\'\t';

function word(pieces, lo, hi) {
  let s = '';
  for (let n = int(lo, hi); n > 0; n--) s += pick(pieces);
  return s;
}
function hex(s) { return Buffer.from(s, 'utf8').toString('hex'); }

function request() {
  const bucket = pick(['models', 'b-1', 'my.bucket']);
  const segments = [];
  for (let n = int(1, 4); n > 0; n--) segments.push(word(KEY_PIECES, 0, 6));
  let key = segments.join('/');
  if (!key) key = 'k';
  const query = {};
  for (let n = pick([0, 0, 1, 2, 4]); n > 0; n--) {
    const k = word(QUERY_PIECES, 1, 3);
    if (k.toLowerCase() === 'x-amz-signature') continue;
    query[k] = pick(['', word(QUERY_PIECES, 1, 4)]);
  }
  const headers = { host: pick(['127.0.0.1:4568', `${bucket}.s3.eu-west-1.amazonaws.com`, 's3.amazonaws.com']) };
  if (rand() < 0.7) headers.range = `bytes=${int(0, 1000)}-${int(1000, 1 << 30)}`;
  for (let n = int(0, 2); n > 0; n--) {
    let v = '';
    for (let m = int(1, 12); m > 0; m--) v += VALUE_CHARS[int(0, VALUE_CHARS.length - 1)];
    headers[pick(['x-amz-meta-a', 'X-Amz-Meta-Bb', 'content-type', 'x-amz-storage-class'])] =
      pick([v, `  ${v}  `, `${v}   ${v}`]);
  }
  const payload = pick(['e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    'UNSIGNED-PAYLOAD', '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072']);
  headers['x-amz-content-sha256'] = payload;
  const date = new Date(Date.UTC(int(2013, 2035), int(0, 11), int(1, 28), int(0, 23), int(0, 59), int(0, 59)));
  const creds = {
    accessKeyId: pick(['AKIAIOSFODNN7EXAMPLE', 'AKIDEXAMPLE', 'onnxz-test']),
    secretAccessKey: word(['a', 'B', '9', '/', '+', '='], 8, 40),
  };
  if (rand() < 0.4) creds.sessionToken = word(['a', 'Q', '/', '+', '='], 20, 60);
  return {
    method: pick(['GET', 'HEAD', 'PUT', 'POST', 'DELETE']),
    bucket, key, query, headers, date, creds,
    region: pick(['us-east-1', 'eu-west-1', 'ap-south-1']),
  };
}

const escape = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

async function main() {
  const reqs = [];
  for (let i = 0; i < count; i++) reqs.push(request());
  // ours: the headers as they are sent (x-amz-date and the token added as the SDK adds them)
  const lines = reqs.map((r) => {
    const amz = r.date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    const h = { ...r.headers, 'x-amz-date': amz };
    if (r.creds.sessionToken) h['x-amz-security-token'] = r.creds.sessionToken;
    const q = Object.entries(r.query);
    const hs = Object.entries(h);
    return [r.method, `/${r.bucket}/${r.key}`, String(q.length), ...q.flat(), String(hs.length),
      ...hs.flat(), r.headers['x-amz-content-sha256'], amz, r.region, 's3', r.creds.accessKeyId,
      r.creds.secretAccessKey].map(hex).join('\t');
  });
  const ours = execFileSync(signer, { input: lines.join('\n') + '\n', maxBuffer: 1 << 28 })
    .toString().split('\n');
  let bad = 0;
  for (let i = 0; i < count; i++) {
    const r = reqs[i];
    const sdk = new SignatureV4({ credentials: r.creds, region: r.region, service: 's3', sha256: Sha256, uriEscapePath: false });
    const path = `/${r.bucket}/${r.key.split('/').map(escape).join('/')}`;
    const signed = await sdk.sign({ method: r.method, protocol: 'https:', hostname: r.headers.host, path, query: r.query, headers: { ...r.headers } }, { signingDate: r.date });
    const want = signed.headers.authorization;
    if (ours[i] !== want) {
      if (bad++ < 5) {
        console.error(`request ${i}: ${JSON.stringify({ method: r.method, key: r.key, query: r.query, headers: r.headers })}`);
        console.error(`  ours ${ours[i]}\n  sdk  ${want}`);
      }
    }
  }
  console.log(`${count - bad} of ${count} Authorization headers equal to @smithy/signature-v4's`);
  process.exit(bad ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(2); });
