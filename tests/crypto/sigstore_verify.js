// sigstore_verify.js BUNDLE PUBLIC.pem - verifies a Sigstore bundle (v0.3, DSSE envelope,
// public-key verification material) with sigstore's own JavaScript verifier
// (@sigstore/verify, @sigstore/bundle from npm), offline: the trusted key is the given PEM,
// found by the bundle's hint, with no transparency log, timestamp or certificate required.
// Prints "verified" and exits 0; on failure prints the verifier's error and exits 1.
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const { bundleFromJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');

const [bundlePath, keyPath] = process.argv.slice(2);
try {
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
  const publicKey = crypto.createPublicKey(fs.readFileSync(keyPath));
  const root = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
  const material = toTrustMaterial(root, (hint) => {
    const pem = publicKey.export({ type: 'spki', format: 'pem' });
    const fp = crypto.createHash('sha256').update(pem).digest('hex');
    if (hint !== fp) throw new Error(`no trusted key for hint ${hint}`);
    return { publicKey, validFor: () => true };
  });
  const verifier = new Verifier(material, {
    tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0,
  });
  verifier.verify(toSignedEntity(bundle));
  console.log('verified');
} catch (e) {
  console.log(`refused: ${e.code || ''} ${e.message}`);
  process.exit(1);
}
