#!/usr/bin/env node
// gate.js CONFIG.json - s3rver behind a gate that makes it answer as S3 does, for the
// S3 tests (tests/remote/s3/README.md).
//
// s3rver 3.7.1 is an S3 look-alike that accepts any signature and implements neither
// listing nor aborting multipart uploads. The gate, in this same process, listens on
// 127.0.0.1 and passes each request on to s3rver (also on 127.0.0.1, unsigned) after:
//   - checking its SigV4 signature by recomputing it with the AWS SDK's own signer
//     (@smithy/signature-v4, the one @aws-sdk/client-s3 signs with) from the configured
//     credentials: a wrong signature gets S3's 403 SignatureDoesNotMatch, an unknown key
//     InvalidAccessKeyId, a configured expired session token ExpiredToken, a body whose
//     SHA-256 is not the signed x-amz-content-sha256 XAmzContentSHA256Mismatch;
//   - letting unsigned requests read (GET, HEAD) a bucket configured public only;
//   - answering with 301 PermanentRedirect and x-amz-bucket-region a request signed for
//     another region than its bucket's;
//   - requiring Content-Length on PUT (411 MissingContentLength);
//   - implementing what s3rver lacks, as S3 specifies it: ListMultipartUploads,
//     AbortMultipartUpload, ListParts, GetBucketLocation, the checks of
//     CompleteMultipartUpload (NoSuchUpload, InvalidPart, InvalidPartOrder, and parts of
//     at least 5 MiB but the last: EntityTooSmall) and of x-amz-checksum-* (BadDigest).
// Each request is logged as one JSON line (method, path, query, range, status, error
// code, bytes received and sent) so that tests can count requests and bytes.
//
// CONFIG: {"directory": s3rver's store (emptied), "log": the request log,
//          "region": the endpoint's own region (default us-east-1),
//          "credentials": [{"key_id", "secret", "token"?, "expired"?}],
//          "buckets": [{"name", "region"?, "public"?}], "min_part_size"?,
//          "faults"?: a file read at each UploadPart, when it exists: {"part": N,
//            "status", "code"}: part N refused so (every attempt); {"delay_ms": T}: every
//            part answered T ms late (a client interrupted mid-upload)}
// When both servers listen, one JSON line goes to stdout: {"port", "endpoint",
// "s3rver_port"}. The gate exits on SIGTERM or SIGINT and when its stdin closes, so a
// test that dies leaves no server behind.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

const S3rver = require('s3rver');
const { SignatureV4, getCanonicalHeaders } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const REGION = config.region || 'us-east-1';
const MIN_PART = config.min_part_size || 5 * 1024 * 1024;
const SPOOL_OVER = 64 * 1024 * 1024; // request bodies above this go to a file, not memory
const SKEW_MS = 15 * 60 * 1000; // S3's RequestTimeTooSkewed limit
const credentials = new Map((config.credentials || []).map(c => [c.key_id, c]));
const bucketConf = new Map((config.buckets || []).map(b => [b.name, b]));
const uploads = new Map(); // uploadId -> {bucket, key, initiated, parts: Map(n -> {size, etag, modified})}
const logFd = fs.openSync(config.log, 'a');
let seq = 0;

// ---- S3's answers ----------------------------------------------------------------------
const xmlEscape = s =>
  String(s).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
const xmlFields = obj =>
  Object.entries(obj)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `<${k}>${xmlEscape(v)}</${k}>`)
    .join('');

// The test's faults for UploadPart (CONFIG's "faults"), {} when none.
function readFaults() {
  if (!config.faults) return {};
  try {
    return JSON.parse(fs.readFileSync(config.faults, 'utf8'));
  } catch (e) {
    return {};
  }
}

function sendXml(ctx, status, body, headers = {}) {
  const buf = Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n' + body);
  ctx.res.writeHead(status, {
    'content-type': 'application/xml',
    'x-amz-request-id': ctx.requestId,
    ...headers,
    ...(ctx.method === 'HEAD' ? {} : { 'content-length': buf.length }),
  });
  ctx.res.end(ctx.method === 'HEAD' ? undefined : buf);
  if (ctx.method !== 'HEAD') ctx.bytesOut += buf.length;
}

function s3Error(ctx, status, code, message, detail = {}, headers = {}) {
  ctx.code = code;
  sendXml(
    ctx,
    status,
    `<Error>${xmlFields({ Code: code, Message: message, ...detail })}` +
      `<RequestId>${ctx.requestId}</RequestId><HostId>gate</HostId></Error>`,
    headers,
  );
  return true;
}

// ---- the request's parts ---------------------------------------------------------------
function percentDecode(s) {
  // bytes; '+' stays '+' (S3 paths and the SDK's queries use %20 for a space)
  const out = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%' && /^[0-9a-fA-F]{2}$/.test(s.substr(i + 1, 2))) {
      out.push(parseInt(s.substr(i + 1, 2), 16));
      i += 2;
    } else {
      out.push(...Buffer.from(s[i], 'utf8'));
    }
  }
  return Buffer.from(out);
}

function uriEncode(buf) {
  // SigV4's UriEncode: every byte but A-Za-z0-9-._~ as %XX
  let s = '';
  for (const b of buf) {
    const c = String.fromCharCode(b);
    s += /[A-Za-z0-9\-._~]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return s;
}

function parseRequest(req) {
  const [rawPath, rawQuery = ''] = req.url.split(/\?(.*)/s);
  const segments = rawPath.split('/');
  const query = {};
  for (const part of rawQuery ? rawQuery.split('&') : []) {
    const [k, v = ''] = part.split(/=(.*)/s);
    const key = percentDecode(k).toString('utf8');
    const value = percentDecode(v).toString('utf8');
    if (key in query) query[key] = [].concat(query[key], value);
    else query[key] = value;
  }
  const bucket = segments[1] ? percentDecode(segments[1]).toString('utf8') : '';
  const key = segments.length > 2 ? percentDecode(segments.slice(2).join('/')).toString('utf8') : '';
  // S3's canonical URI: each segment decoded, then encoded once
  const canonicalPath = segments.map(s => uriEncode(percentDecode(s))).join('/') || '/';
  const headers = {}; // lower-case name -> values joined by ','
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    headers[name] = name in headers ? headers[name] + ',' + req.rawHeaders[i + 1] : req.rawHeaders[i + 1];
  }
  return { rawPath, rawQuery, query, bucket, key, canonicalPath, headers };
}

// The body, in memory or (past SPOOL_OVER) in a file, with the digests `need` names (of
// sha256, md5, sha1, crc32, crc32c: only those the request's headers call for, as the
// pure-JS CRC32C is slow).
function readBody(req, need) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let file = null;
    let fileStream = null;
    const hash = name => (need.has(name) ? crypto.createHash(name) : null);
    const sha256 = hash('sha256');
    const sha1 = hash('sha1');
    const md5 = hash('md5');
    let crc32 = 0;
    let crc32c = 0;
    req.on('data', chunk => {
      size += chunk.length;
      if (sha256) sha256.update(chunk);
      if (sha1) sha1.update(chunk);
      if (md5) md5.update(chunk);
      if (need.has('crc32')) crc32 = zlib.crc32(chunk, crc32);
      if (need.has('crc32c')) crc32c = crc32cUpdate(crc32c, chunk);
      if (fileStream) {
        fileStream.write(chunk);
      } else if (size > SPOOL_OVER) {
        file = path.join(os.tmpdir(), `s3gate-${process.pid}-${crypto.randomBytes(6).toString('hex')}`);
        fileStream = fs.createWriteStream(file);
        for (const c of chunks) fileStream.write(c);
        fileStream.write(chunk);
        chunks.length = 0;
      } else {
        chunks.push(chunk);
      }
    });
    req.on('error', reject);
    req.on('end', () => {
      const be32 = n => {
        const b = Buffer.alloc(4);
        b.writeUInt32BE(n >>> 0);
        return b.toString('base64');
      };
      const body = {
        size,
        buffer: file ? null : Buffer.concat(chunks),
        file,
        sha256: sha256 && sha256.digest('hex'),
        md5: md5 && md5.digest('hex'),
        checksums: {
          sha256: null, // filled below from the hex digest
          sha1: sha1 && sha1.digest('base64'),
          crc32: be32(crc32),
          crc32c: be32(crc32c),
        },
      };
      if (body.sha256) body.checksums.sha256 = Buffer.from(body.sha256, 'hex').toString('base64');
      if (fileStream) fileStream.end(() => resolve(body));
      else resolve(body);
    });
  });
}

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32cUpdate(crc, buf) {
  let c = ~crc >>> 0;
  for (const b of buf) c = CRC32C_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

// ---- SigV4 --------------------------------------------------------------------------------
const AUTH_RE =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9\-;.]+),\s*Signature=([0-9a-f]{64})$/;

function parseAmzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  return m ? new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

// The signature check: false when it passes, true when it sent S3's error.
async function checkSignature(ctx, req) {
  const p = ctx.parsed;
  const auth = p.headers.authorization;
  if (!auth.startsWith('AWS4-HMAC-SHA256 ')) {
    return s3Error(ctx, 400, 'InvalidArgument', 'Unsupported Authorization Type', {
      ArgumentName: 'Authorization',
      ArgumentValue: auth.split(' ')[0],
    });
  }
  const m = AUTH_RE.exec(auth);
  if (!m) {
    return s3Error(ctx, 400, 'AuthorizationHeaderMalformed',
      'The authorization header is malformed; the Credential is mal-formed.');
  }
  const [, keyId, scopeDate, region, service, signedList, signature] = m;
  ctx.keyId = keyId;
  ctx.region = region;
  const cred = credentials.get(keyId);
  if (!cred) {
    return s3Error(ctx, 403, 'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.', { AWSAccessKeyId: keyId });
  }
  if (service !== 's3') {
    return s3Error(ctx, 400, 'AuthorizationHeaderMalformed',
      `The authorization header is malformed; incorrect service "${service}". This endpoint belongs to "s3".`);
  }
  const amzDate = p.headers['x-amz-date'];
  const when = parseAmzDate(amzDate);
  if (!when) {
    return s3Error(ctx, 403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  }
  if (amzDate.slice(0, 8) !== scopeDate) {
    return s3Error(ctx, 400, 'AuthorizationHeaderMalformed',
      `The authorization header is malformed; Invalid credential date "${scopeDate}". This date is not the same as X-Amz-Date: "${amzDate.slice(0, 8)}".`);
  }
  if (Math.abs(Date.now() - when.getTime()) > SKEW_MS) {
    return s3Error(ctx, 403, 'RequestTimeTooSkewed',
      'The difference between the request time and the current time is too large.', {
        RequestTime: amzDate,
        ServerTime: new Date().toISOString(),
        MaxAllowedSkewMilliseconds: SKEW_MS,
      });
  }
  const signed = signedList.split(';');
  if (!signed.includes('host')) {
    return s3Error(ctx, 403, 'AccessDenied', 'Signature header missing host field');
  }
  const unsigned = Object.keys(p.headers).filter(h => h.startsWith('x-amz-') && !signed.includes(h));
  if (unsigned.length) {
    return s3Error(ctx, 403, 'AccessDenied', 'There were headers present in the request which were not signed',
      { HeadersNotSigned: unsigned.join(', ') });
  }
  const contentSha = p.headers['x-amz-content-sha256'];
  if (!contentSha) {
    return s3Error(ctx, 400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  }
  if (contentSha.startsWith('STREAMING-')) {
    return s3Error(ctx, 501, 'NotImplemented',
      `the test gate does not check ${contentSha} (aws-chunked) bodies`);
  }
  if (contentSha !== 'UNSIGNED-PAYLOAD' && !/^[0-9a-f]{64}$/.test(contentSha)) {
    return s3Error(ctx, 400, 'InvalidArgument', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-..., or a valid sha256 value.',
      { ArgumentName: 'x-amz-content-sha256', ArgumentValue: contentSha });
  }
  const token = p.headers['x-amz-security-token'];
  if (cred.token !== undefined || token !== undefined) {
    if (cred.token === undefined || token !== cred.token) {
      return s3Error(ctx, 400, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
    }
    if (cred.expired) {
      return s3Error(ctx, 400, 'ExpiredToken', 'The provided token has expired.', { 'Token-0': token });
    }
  }

  // The SDK's signer, on the request as S3 sees it: the signed headers only.
  const headers = {};
  for (const h of signed) if (h in p.headers) headers[h] = p.headers[h];
  const request = {
    method: req.method,
    protocol: 'http:',
    hostname: (p.headers.host || '').replace(/:\d+$/, ''),
    path: p.canonicalPath,
    query: p.query,
    headers,
  };
  const signer = new SignatureV4({
    credentials: { accessKeyId: keyId, secretAccessKey: cred.secret, sessionToken: cred.token },
    region,
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false, // S3 encodes the path once; canonicalPath is encoded already
    applyChecksum: false,
  });
  const signableHeaders = new Set(signed);
  const ours = await signer.sign(request, { signingDate: when, signableHeaders });
  const expected = /Signature=([0-9a-f]+)/.exec(ours.headers.authorization)[1];
  const ourSigned = /SignedHeaders=([^,]+)/.exec(ours.headers.authorization)[1];
  if (expected !== signature || ourSigned !== signedList) {
    const canonicalHeaders = getCanonicalHeaders(ours, undefined, signableHeaders);
    const canonical = signer.createCanonicalRequest(ours, canonicalHeaders, contentSha);
    const stringToSign = await signer.createStringToSign(
      amzDate, `${scopeDate}/${region}/s3/aws4_request`, canonical, 'AWS4-HMAC-SHA256');
    const hex = s => Buffer.from(s).toString('hex').replace(/(..)(?!$)/g, '$1 ');
    return s3Error(ctx, 403, 'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.', {
        AWSAccessKeyId: keyId,
        StringToSign: stringToSign,
        SignatureProvided: signature,
        StringToSignBytes: hex(stringToSign),
        CanonicalRequest: canonical,
        CanonicalRequestBytes: hex(canonical),
      });
  }
  return false;
}

// ---- multipart uploads, as S3 specifies them --------------------------------------------
const iso = d => d.toISOString().replace(/Z$/, '').replace(/\.\d{3}$/, '') + '.000Z';

function listUploads(ctx, bucket) {
  const q = ctx.parsed.query;
  const prefix = q.prefix || '';
  const max = Math.min(Number(q['max-uploads'] || 1000), 1000);
  const keyMarker = q['key-marker'] || '';
  const idMarker = q['upload-id-marker'] || '';
  let list = [...uploads.entries()]
    .filter(([, u]) => u.bucket === bucket && u.key.startsWith(prefix))
    .sort(([ia, a], [ib, b]) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.initiated - b.initiated || (ia < ib ? -1 : 1)));
  if (keyMarker) {
    list = list.filter(([id, u]) => u.key > keyMarker || (idMarker && u.key === keyMarker && id > idMarker));
  }
  const truncated = list.length > max;
  list = list.slice(0, max);
  const last = list[list.length - 1];
  const owner = '<Owner><ID>gate</ID><DisplayName>gate</DisplayName></Owner>';
  sendXml(ctx, 200,
    '<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      xmlFields({ Bucket: bucket, KeyMarker: keyMarker, UploadIdMarker: idMarker }) +
      xmlFields(truncated ? { NextKeyMarker: last[1].key, NextUploadIdMarker: last[0] } : {}) +
      xmlFields({ Prefix: prefix, MaxUploads: max, IsTruncated: truncated }) +
      list.map(([id, u]) =>
        '<Upload>' + xmlFields({ Key: u.key, UploadId: id }) +
        `<Initiator><ID>gate</ID><DisplayName>gate</DisplayName></Initiator>${owner}` +
        xmlFields({ StorageClass: 'STANDARD', Initiated: iso(u.initiated) }) + '</Upload>').join('') +
      '</ListMultipartUploadsResult>');
}

function findUpload(ctx, bucket, key) {
  const id = ctx.parsed.query.uploadId;
  const u = uploads.get(id);
  if (!u || u.bucket !== bucket || u.key !== key) {
    s3Error(ctx, 404, 'NoSuchUpload',
      'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
      { UploadId: id });
    return null;
  }
  return u;
}

function listParts(ctx, bucket, key, u) {
  const q = ctx.parsed.query;
  const max = Math.min(Number(q['max-parts'] || 1000), 1000);
  const marker = Number(q['part-number-marker'] || 0);
  let parts = [...u.parts.entries()].filter(([n]) => n > marker).sort(([a], [b]) => a - b);
  const truncated = parts.length > max;
  parts = parts.slice(0, max);
  sendXml(ctx, 200,
    '<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      xmlFields({ Bucket: bucket, Key: key, UploadId: q.uploadId, PartNumberMarker: marker }) +
      xmlFields(truncated ? { NextPartNumberMarker: parts[parts.length - 1][0] } : {}) +
      xmlFields({ MaxParts: max, IsTruncated: truncated, StorageClass: 'STANDARD' }) +
      parts.map(([n, p]) => '<Part>' + xmlFields({
        PartNumber: n, LastModified: iso(p.modified), ETag: `"${p.etag}"`, Size: p.size,
      }) + '</Part>').join('') +
      '</ListPartsResult>');
}

async function abortUpload(ctx, s3rver, id, u) {
  uploads.delete(id);
  const dir = path.join(s3rver.store.getResourcePath(u.bucket, undefined, 'uploads'), id);
  await fs.promises.rm(dir, { recursive: true, force: true });
  ctx.res.writeHead(204, { 'x-amz-request-id': ctx.requestId });
  ctx.res.end();
}

// CompleteMultipartUpload's checks: false when they pass, true when S3's error was sent.
function checkComplete(ctx, u, body) {
  const xml = body.buffer ? body.buffer.toString('utf8') : '';
  const parts = [...xml.matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map(m => ({
    n: Number((/<PartNumber>\s*(\d+)\s*<\/PartNumber>/.exec(m[1]) || [])[1]),
    etag: ((/<ETag>([\s\S]*?)<\/ETag>/.exec(m[1]) || [])[1] || '').replace(/&quot;|"/g, '').trim(),
  }));
  if (!/<CompleteMultipartUpload[\s>]/.test(xml) || !parts.length || parts.some(p => !p.n)) {
    return s3Error(ctx, 400, 'MalformedXML',
      'The XML you provided was not well-formed or did not validate against our published schema');
  }
  for (let i = 1; i < parts.length; i++) {
    if (parts[i].n <= parts[i - 1].n) {
      return s3Error(ctx, 400, 'InvalidPartOrder',
        'The list of parts was not in ascending order. Parts must be ordered by part number.', { UploadId: ctx.parsed.query.uploadId });
    }
  }
  for (const [i, p] of parts.entries()) {
    const have = u.parts.get(p.n);
    if (!have || have.etag !== p.etag) {
      return s3Error(ctx, 400, 'InvalidPart',
        "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        { UploadId: ctx.parsed.query.uploadId, PartNumber: p.n, ETag: p.etag });
    }
    if (i < parts.length - 1 && have.size < MIN_PART) {
      return s3Error(ctx, 400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', {
        ProposedSize: have.size, MinSizeAllowed: MIN_PART, PartNumber: p.n, ETag: p.etag,
      });
    }
  }
  return false;
}

// ---- passing a request on to s3rver ------------------------------------------------------
const DROP = new Set(['authorization', 'x-amz-security-token', 'x-amz-content-sha256', 'x-amz-date',
  'expect', 'connection', 'keep-alive', 'transfer-encoding', 'host']);

function forward(ctx, req, body, s3rverPort, { capture = false } = {}) {
  return new Promise((resolve, reject) => {
    const headers = {};
    for (const [k, v] of Object.entries(ctx.parsed.headers)) if (!DROP.has(k)) headers[k] = v;
    headers.host = `127.0.0.1:${s3rverPort}`;
    if (body.size || req.method === 'PUT' || req.method === 'POST') headers['content-length'] = body.size;
    const up = http.request({ host: '127.0.0.1', port: s3rverPort, method: req.method, path: req.url, headers }, r => {
      const out = { ...r.headers, 'x-amz-request-id': ctx.requestId };
      delete out.connection;
      delete out['keep-alive'];
      if (capture || (r.statusCode >= 300 && r.statusCode !== 304)) {
        const chunks = [];
        r.on('data', c => chunks.push(c));
        r.on('end', () => {
          const got = { status: r.statusCode, headers: out, body: Buffer.concat(chunks) };
          if (capture) return resolve(got);
          sendCaptured(ctx, got); // an error: its code goes to the log
          resolve(null);
        });
        r.on('error', reject);
        return;
      }
      ctx.res.writeHead(r.statusCode, out);
      // Logged before the chunk that completes the body is passed on (this listener runs
      // before pipe's): a client holding its whole answer finds its request in the log,
      // where res.end, which waits for s3rver's end, could come after the client's next look.
      const expected = Number(out['content-length']);
      r.on('data', c => {
        ctx.bytesOut += c.length;
        if (ctx.bytesOut >= expected) ctx.log();
      });
      r.pipe(ctx.res);
      r.on('end', () => resolve(null));
      r.on('error', reject);
    });
    up.on('error', reject);
    if (body.file) fs.createReadStream(body.file).pipe(up);
    else up.end(body.buffer && body.buffer.length ? body.buffer : undefined);
  });
}

function sendCaptured(ctx, r) {
  if (r.status >= 300) {
    const code = /<Code>([^<]*)<\/Code>/.exec(r.body.toString('utf8'));
    ctx.code = code ? code[1] : String(r.status);
  }
  if (ctx.method !== 'HEAD') {
    delete r.headers['transfer-encoding'];
    r.headers['content-length'] = r.body.length;
    ctx.bytesOut += r.body.length;
  }
  ctx.res.writeHead(r.status, r.headers);
  ctx.res.end(ctx.method === 'HEAD' ? undefined : r.body);
}

// Rewrites Range: bytes=-N as the absolute range S3 would serve (the last N bytes, the
// whole object when N is larger); true when S3's 416 for N = 0 or an empty object was sent.
async function suffixRange(ctx, s3rver) {
  const p = ctx.parsed;
  let size;
  try {
    size = Number((await s3rver.store.getMetadata(p.bucket, p.key))['content-length']);
  } catch (e) {
    return false; // no such key: s3rver says so
  }
  const n = Number(p.headers.range.slice('bytes=-'.length));
  if (n === 0 || size === 0) {
    return s3Error(ctx, 416, 'InvalidRange', 'The requested range is not satisfiable', {
      RangeRequested: p.headers.range, ActualObjectSize: size,
    });
  }
  p.headers.range = `bytes=${Math.max(0, size - n)}-${size - 1}`;
  return false;
}

// ---- the gate --------------------------------------------------------------------------
async function handle(ctx, req, s3rver, s3rverPort) {
  const p = ctx.parsed;
  const q = p.query;
  const method = req.method;
  if (method === 'PUT' && req.headers['content-length'] === undefined) {
    req.resume();
    return s3Error(ctx, 411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.', {},
      { connection: 'close' });
  }
  const need = new Set();
  if (/^[0-9a-f]{64}$/.test(p.headers['x-amz-content-sha256'] || '')) need.add('sha256');
  if (method === 'PUT' && 'uploadId' in q) need.add('md5'); // the part's ETag
  for (const algo of ['crc32', 'crc32c', 'sha1', 'sha256']) {
    if (p.headers[`x-amz-checksum-${algo}`] !== undefined) need.add(algo);
  }
  const body = await readBody(req, need);
  ctx.bytesIn = body.size;
  try {
    if (p.headers.authorization !== undefined) {
      if (await checkSignature(ctx, req)) return;
    } else if ('X-Amz-Algorithm' in q || 'Signature' in q) {
      return s3Error(ctx, 501, 'NotImplemented', 'the test gate does not check presigned URLs');
    }
    const signed = p.headers.authorization !== undefined;
    const contentSha = p.headers['x-amz-content-sha256'];
    if (signed && /^[0-9a-f]{64}$/.test(contentSha) && contentSha !== body.sha256) {
      return s3Error(ctx, 400, 'XAmzContentSHA256Mismatch',
        "The provided 'x-amz-content-sha256' header does not match what was computed.", {
          ClientComputedContentSHA256: contentSha, S3ComputedContentSHA256: body.sha256,
        });
    }
    for (const algo of ['crc32', 'crc32c', 'sha1', 'sha256']) {
      const given = p.headers[`x-amz-checksum-${algo}`];
      if (given !== undefined && given !== body.checksums[algo]) {
        return s3Error(ctx, 400, 'BadDigest', `The ${algo.toUpperCase()} you specified did not match the calculated checksum.`);
      }
    }
    if (!p.bucket) {
      if (!signed) return s3Error(ctx, 403, 'AccessDenied', 'Access Denied');
      return await forward(ctx, req, body, s3rverPort);
    }
    const conf = bucketConf.get(p.bucket) || {};
    const bucketRegion = conf.region || REGION;
    if (!signed && !(conf.public && (method === 'GET' || method === 'HEAD'))) {
      return s3Error(ctx, 403, 'AccessDenied', 'Access Denied');
    }
    const exists = fs.existsSync(path.join(config.directory, p.bucket));
    const requestRegion = ctx.region || REGION;
    if (exists && requestRegion !== bucketRegion && !(method === 'GET' && !p.key && 'location' in q)) {
      return s3Error(ctx, 301, 'PermanentRedirect',
        'The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.',
        { Endpoint: `s3.${bucketRegion}.amazonaws.com`, Bucket: p.bucket },
        { 'x-amz-bucket-region': bucketRegion });
    }
    if (!exists && !(method === 'PUT' && !p.key)) {
      return s3Error(ctx, 404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: p.bucket });
    }
    if (!p.key) {
      if (method === 'GET' && 'location' in q) {
        const loc = bucketRegion === 'us-east-1' ? '' : bucketRegion;
        return sendXml(ctx, 200, `<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${xmlEscape(loc)}</LocationConstraint>`);
      }
      if (method === 'GET' && 'uploads' in q) return listUploads(ctx, p.bucket);
      if (method === 'HEAD') {
        ctx.res.writeHead(200, { 'x-amz-bucket-region': bucketRegion, 'x-amz-request-id': ctx.requestId });
        return ctx.res.end();
      }
      return await forward(ctx, req, body, s3rverPort);
    }
    if ('uploadId' in q) {
      const u = findUpload(ctx, p.bucket, p.key);
      if (!u) return;
      if (method === 'DELETE') return await abortUpload(ctx, s3rver, q.uploadId, u);
      if (method === 'GET') return listParts(ctx, p.bucket, p.key, u);
      if (method === 'PUT') {
        const n = Number(q.partNumber);
        if (!Number.isInteger(n) || n < 1 || n > 10000) {
          return s3Error(ctx, 400, 'InvalidArgument', 'Part number must be an integer between 1 and 10000, inclusive',
            { ArgumentName: 'partNumber', ArgumentValue: q.partNumber });
        }
        const fault = readFaults();
        if (fault.delay_ms) await new Promise(done => setTimeout(done, fault.delay_ms));
        if (fault.part === n) return s3Error(ctx, fault.status || 400, fault.code || 'InvalidRequest', 'a fault the test asked for');
        const r = await forward(ctx, req, body, s3rverPort, { capture: true });
        if (r.status === 200) {
          u.parts.set(n, { size: body.size, etag: body.md5, modified: new Date() });
          for (const algo of ['crc32', 'crc32c', 'sha1', 'sha256']) {
            if (p.headers[`x-amz-checksum-${algo}`] !== undefined) r.headers[`x-amz-checksum-${algo}`] = body.checksums[algo];
          }
        }
        return sendCaptured(ctx, r);
      }
      if (method === 'POST') {
        if (checkComplete(ctx, u, body)) return;
        const r = await forward(ctx, req, body, s3rverPort, { capture: true });
        if (r.status === 200) uploads.delete(q.uploadId);
        return sendCaptured(ctx, r);
      }
    }
    if (method === 'POST' && 'uploads' in q) {
      const r = await forward(ctx, req, body, s3rverPort, { capture: true });
      const id = /<UploadId>([^<]+)<\/UploadId>/.exec(r.body.toString('utf8'));
      if (r.status === 200 && id) {
        uploads.set(id[1], { bucket: p.bucket, key: p.key, initiated: new Date(), parts: new Map() });
      }
      return sendCaptured(ctx, r);
    }
    if ((method === 'GET' || method === 'HEAD') && /^bytes=-\d+$/.test(p.headers.range || '')) {
      // s3rver reads a suffix range bytes=-N as bytes=0-N; S3 gives the last N bytes
      if (await suffixRange(ctx, s3rver)) return;
    }
    return await forward(ctx, req, body, s3rverPort);
  } finally {
    if (body.file) fs.promises.rm(body.file, { force: true }).catch(() => {});
  }
}

function logRequest(ctx, req) {
  const p = ctx.parsed || {};
  const line = JSON.stringify({
    seq: ++seq,
    time: ctx.start / 1000,
    ms: Date.now() - ctx.start,
    method: req.method,
    path: p.rawPath,
    query: p.rawQuery,
    bucket: p.bucket,
    key: p.key,
    range: req.headers.range || '',
    content_range: ctx.res.getHeader('content-range') || '',
    status: ctx.res.statusCode,
    code: ctx.code || '',
    bytes_in: ctx.bytesIn,
    bytes_sent: ctx.bytesOut,
    auth: req.headers.authorization ? 'sigv4' : 'anonymous',
    key_id: ctx.keyId || '',
    region: ctx.region || '',
    user_agent: req.headers['user-agent'] || '',
  });
  fs.writeSync(logFd, line + '\n');
}

async function main() {
  fs.rmSync(config.directory, { recursive: true, force: true });
  fs.mkdirSync(config.directory, { recursive: true });
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: config.directory,
    vhostBuckets: false,
    configureBuckets: (config.buckets || []).map(b => ({ name: b.name })),
  });
  const { port: s3rverPort } = await s3rver.run();
  const server = http.createServer((req, res) => {
    const ctx = {
      res, method: req.method, start: Date.now(), bytesIn: 0, bytesOut: 0, code: '',
      requestId: crypto.randomBytes(8).toString('hex').toUpperCase(),
    };
    // Logged as the response ends, before its last bytes leave: a client that has the
    // whole answer finds its request in the log. A response cut short is logged as it closes.
    let logged = false;
    const log = () => {
      if (!logged) logRequest(ctx, req);
      logged = true;
    };
    ctx.log = log;
    const end = res.end.bind(res);
    res.end = (...args) => {
      log();
      return end(...args);
    };
    res.on('close', log);
    try {
      ctx.parsed = parseRequest(req);
    } catch (e) {
      return s3Error(ctx, 400, 'InvalidURI', "Couldn't parse the specified URI.");
    }
    handle(ctx, req, s3rver, s3rverPort).catch(e => {
      process.stderr.write(`gate: ${req.method} ${req.url}: ${e.stack}\n`);
      if (!res.headersSent) s3Error(ctx, 500, 'InternalError', 'We encountered an internal error. Please try again.');
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 30000;
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
  process.stdout.write(JSON.stringify({ port, endpoint: `http://127.0.0.1:${port}`, s3rver_port: s3rverPort }) + '\n');
}

main().catch(e => {
  process.stderr.write(`gate: ${e.stack}\n`);
  process.exit(1);
});
