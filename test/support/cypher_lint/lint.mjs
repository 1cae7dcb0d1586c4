// Lints Cypher statements with Neo4j's own front end (@neo4j-cypher/language-support).
// stdin: {"node_modules": DIR, "catalogue": FILE, "statements": [{"name": ..., "query": ...}]}
// stdout: [{"name": ..., "diagnostics": [{"severity": "error"|"warning"|..., "message": ..., "at": OFFSET}]}]
// Functions and procedures not in the catalogue are errors. Parameters are declared
// as they come: their values are only known at run time.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const input = JSON.parse(readFileSync(0, 'utf8'));
const require = createRequire(path.join(path.resolve(input.node_modules), 'noop.js'));
const { lintCypherQuery } = require('@neo4j-cypher/language-support');
const catalogue = JSON.parse(readFileSync(input.catalogue, 'utf8'));
const VERSION = 'CYPHER 5';
const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

const anyParameter = new Proxy({}, { get: () => ({}) });
const schema = {
  functions: { [VERSION]: catalogue.functions },
  procedures: { [VERSION]: catalogue.procedures },
  defaultLanguage: VERSION,
  parameters: anyParameter,
};

const results = input.statements.map(({ name, query }) => {
  const { diagnostics } = lintCypherQuery(query, schema, { consoleCommandsEnabled: false });
  return {
    name,
    diagnostics: diagnostics.map((d) => ({
      severity: SEVERITY[d.severity] ?? String(d.severity),
      message: d.message,
      at: d.offsets?.start ?? null,
    })),
  };
});
process.stdout.write(JSON.stringify(results) + '\n');
