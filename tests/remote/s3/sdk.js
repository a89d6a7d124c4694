// sdk.js REQUEST.json - Amazon's client, @aws-sdk/client-s3, as a command for the Python
// tests (s3_env.py's Gate.sdk): the independent oracle that uploads the objects onnxz reads
// and reads back what onnxz writes.
// REQUEST: {"endpoint", "region", "account": {key_id, secret, token?} or null,
//           "ops": [{"op": "put", "bucket", "key", "file"},
//                   {"op": "get", "bucket", "key", "file", "range"?},
//                   {"op": "head", "bucket", "key"}, {"op": "delete", "bucket", "key"},
//                   {"op": "list", "bucket", "prefix"?}, {"op": "uploads", "bucket"}]}
// Prints one JSON line: a result per op, {"error": S3 code, "status": HTTP status} for a
// failed one. put and get stream files, so objects of any size go through.
'use strict';

const fs = require('fs');
const { pipeline } = require('stream/promises');
const {
  DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand,
  ListObjectsV2Command, PutObjectCommand,
} = require('@aws-sdk/client-s3');
const { client } = require('./harness');

async function run(s3, op) {
  const where = { Bucket: op.bucket, Key: op.key };
  switch (op.op) {
    case 'put': {
      const size = fs.statSync(op.file).size;
      const r = await s3.send(new PutObjectCommand({ ...where, Body: fs.createReadStream(op.file), ContentLength: size }));
      return { etag: r.ETag, size };
    }
    case 'get': {
      const r = await s3.send(new GetObjectCommand({ ...where, Range: op.range }));
      await pipeline(r.Body, fs.createWriteStream(op.file));
      return { size: fs.statSync(op.file).size, content_range: r.ContentRange };
    }
    case 'head': {
      const r = await s3.send(new HeadObjectCommand(where));
      return { size: r.ContentLength, etag: r.ETag };
    }
    case 'delete':
      await s3.send(new DeleteObjectCommand(where));
      return {};
    case 'list': {
      const r = await s3.send(new ListObjectsV2Command({ Bucket: op.bucket, Prefix: op.prefix }));
      return { keys: (r.Contents || []).map(c => [c.Key, c.Size]) };
    }
    case 'uploads': {
      const r = await s3.send(new ListMultipartUploadsCommand({ Bucket: op.bucket }));
      return { uploads: (r.Uploads || []).map(u => [u.Key, u.UploadId]) };
    }
    default:
      throw new Error(`sdk.js: unknown op ${op.op}`);
  }
}

(async () => {
  const req = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const s3 = client(req.endpoint, req.account, req.region || 'us-east-1');
  const results = [];
  for (const op of req.ops) {
    try {
      results.push(await run(s3, op));
    } catch (e) {
      if (!e.$metadata) throw e;
      results.push({ error: e.name, status: e.$metadata.httpStatusCode });
    }
  }
  process.stdout.write(JSON.stringify(results) + '\n');
})().catch(e => {
  process.stderr.write(`sdk.js: ${e.stack}\n`);
  process.exit(1);
});
