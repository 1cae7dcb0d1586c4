// Writes neo4j5_catalogue.json: the functions and procedures of Neo4j 5 (Cypher 5)
// without APOC and GDS, taken from @neo4j-cypher/language-support's testData.mockSchema
// (a dump of a Neo4j 5 server's SHOW FUNCTIONS / SHOW PROCEDURES with plugins).
// Run: node make_catalogue.mjs NODE_MODULES_DIR > neo4j5_catalogue.json
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(path.resolve(process.argv[2]), 'noop.js'));
const { testData } = require('@neo4j-cypher/language-support');
const VERSION = 'CYPHER 5';
const PLUGINS = /^(apoc|gds)\./;
const DROP = new Set(['rolesExecution', 'rolesBoostedExecution']);

function keep(registry) {
  const out = {};
  for (const name of Object.keys(registry).sort()) {
    if (PLUGINS.test(name)) continue;
    out[name] = Object.fromEntries(Object.entries(registry[name]).filter(([k]) => !DROP.has(k)));
  }
  return out;
}

const schema = testData.mockSchema;
process.stdout.write(JSON.stringify({
  source: '@neo4j-cypher/language-support testData.mockSchema, Cypher 5, apoc.* and gds.* removed',
  functions: keep(schema.functions[VERSION]),
  procedures: keep(schema.procedures[VERSION]),
}, null, 1) + '\n');
