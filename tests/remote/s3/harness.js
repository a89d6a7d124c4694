// The harness's JavaScript side: starts gate.js (s3rver behind the gate) and makes
// @aws-sdk/client-s3 clients for it. Used by gate_test.js; s3_env.py is the Python twin.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');
const { S3Client } = require('@aws-sdk/client-s3');

// The test's own accounts and buckets (fixture.json, shared with s3_env.py).
const FIXTURE = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixture.json'), 'utf8'));
const ACCOUNTS = FIXTURE.accounts;
const BUCKETS = FIXTURE.buckets.map(({ comment, ...b }) => b);

function startGate(work, { buckets = BUCKETS, accounts = ACCOUNTS, timeoutMs = 20000 } = {}) {
  fs.mkdirSync(work, { recursive: true });
  const conf = {
    directory: path.join(work, 'store'),
    log: path.join(work, 'requests.jsonl'),
    region: FIXTURE.region,
    credentials: Object.values(accounts),
    buckets,
  };
  fs.rmSync(conf.log, { force: true });
  const confPath = path.join(work, 'gate.json');
  fs.writeFileSync(confPath, JSON.stringify(conf, null, 1));
  const stderr = fs.openSync(path.join(work, 'gate.stderr'), 'w');
  const proc = spawn(process.execPath, [path.join(__dirname, 'gate.js'), confPath], {
    stdio: ['pipe', 'pipe', stderr],
    env: process.env,
  });
  fs.closeSync(stderr);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`gate did not start in ${timeoutMs} ms; see ${work}/gate.stderr`));
    }, timeoutMs);
    proc.on('exit', code => {
      clearTimeout(timer);
      reject(new Error(`gate exited (${code}) before it was ready; see ${work}/gate.stderr`));
    });
    proc.stdout.on('data', d => {
      out += d;
      if (!out.includes('\n')) return;
      clearTimeout(timer);
      const info = JSON.parse(out.split('\n')[0]);
      resolve({
        ...info,
        proc,
        log: conf.log,
        requests() {
          const text = fs.existsSync(conf.log) ? fs.readFileSync(conf.log, 'utf8') : '';
          return text.split('\n').filter(Boolean).map(l => JSON.parse(l));
        },
        stop() {
          return new Promise(done => {
            if (proc.exitCode !== null || proc.signalCode !== null) return done();
            proc.removeAllListeners('exit');
            proc.on('exit', () => done());
            proc.kill('SIGTERM');
          });
        },
      });
    });
  });
}

function client(endpoint, account, region = 'us-east-1', extra = {}) {
  return new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: account && {
      accessKeyId: account.key_id,
      secretAccessKey: account.secret,
      sessionToken: account.token,
    },
    // the gate does not check aws-chunked bodies; and s3rver sends no checksums back
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
    ...extra,
  });
}

module.exports = { ACCOUNTS, BUCKETS, startGate, client };
