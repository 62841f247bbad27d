// src/adopt.ts in Node (transpiled on the fly, as scripts/tokens.cjs does): which cell a
// run's output messages go to in a page that did not send the run's request, and what they
// do there. Run by tests/test_labextension_adopt.py; needs `npm ci` (typescript).
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require('typescript');
const { test } = require('node:test');
const assert = require('node:assert/strict');

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2019 },
    fileName: filename
  });
  module._compile(outputText, filename);
};
const { adoptRunOutputs, applyOutput, LIVE_MIME, orphanCell } = require(path.join(__dirname, '..', 'src', 'adopt.ts'));

// A cell's output area model, as much of it as adopt.ts uses: outputs kept as nbformat
// writes them; `get` gives each with its `data`.
function outputList(items) {
  return {
    items,
    get length() { return this.items.length; },
    get(i) { return { data: this.items[i].data || {} }; },
    set(i, output) { this.items[i] = output; },
    add(output) { this.items.push(output); return this.items.length - 1; }
  };
}
const live = (parent, display) => ({ output_type: 'display_data', data: { [LIVE_MIME]: { run: 'r1', display, parent }, 'text/plain': 'Flow run r1: …' } });
const codeCell = (items, future) => ({ model: { type: 'code', outputs: outputList(items), executionCount: null },
                                        outputArea: { future: future ? { msg: { header: { msg_id: future } } } : null } });
const message = (type, parent, content) => ({ header: { msg_type: type }, parent_header: { msg_id: parent }, content });
const summary = message('update_display_data', 'req-1', { data: { 'text/plain': 'Flow run: completed' }, metadata: {}, transient: { display_id: 'flow-run-r1-a' } });

test('the cell showing the live view of a request the page did not send', () => {
  const other = codeCell([{ output_type: 'stream', name: 'stdout', text: 'hi' }]);
  const markdown = { model: { type: 'markdown' } };
  const shows = codeCell([live('req-1', 'flow-run-r1-a')]);
  assert.equal(orphanCell([markdown, other, shows], 'req-1'), shows);
  assert.equal(orphanCell([markdown, other, shows], 'req-2'), null);
  // The page that sent it: its output area has the request's future, which shows the outputs.
  assert.equal(orphanCell([codeCell([live('req-1', 'flow-run-r1-a')], 'req-1')], 'req-1'), null);
});

test('the summary replaces the live view in place; the result and streams are added', () => {
  const cell = codeCell([{ output_type: 'stream', name: 'stdout', text: 'before' }, live('req-1', 'flow-run-r1-a')]);
  applyOutput(cell, message('update_display_data', 'req-1', { ...summary.content, transient: { display_id: 'flow-run-r9-z' } }));
  assert.ok(LIVE_MIME in cell.model.outputs.items[1].data); // another display's update: not this view
  applyOutput(cell, summary);
  assert.deepEqual(cell.model.outputs.items[1], { output_type: 'display_data', data: { 'text/plain': 'Flow run: completed' }, metadata: {} });
  applyOutput(cell, message('stream', 'req-1', { name: 'stdout', text: 'after\n' }));
  applyOutput(cell, message('execute_result', 'req-1', { data: { 'text/plain': '"archived"' }, metadata: {}, execution_count: 4 }));
  applyOutput(cell, message('error', 'req-1', { ename: 'E', evalue: 'v', traceback: ['t'] }));
  assert.deepEqual(cell.model.outputs.items.slice(2).map((o) => o.output_type), ['stream', 'execute_result', 'error']);
  assert.equal(cell.model.executionCount, 4);
});

test('a page applies only its orphan request\'s output messages, to the one cell, until idle', () => {
  let slot = null;
  const cell = codeCell([live('req-1', 'flow-run-r1-a')]);
  const mine = codeCell([], 'req-own');
  const panel = { content: { widgets: [mine, cell] }, sessionContext: { iopubMessage: { connect: (f) => { slot = f; return true; } } } };
  adoptRunOutputs(panel);
  const send = (msg) => slot(null, msg);
  send(message('stream', 'req-own', { name: 'stdout', text: 'the page\'s own' }));
  send(message('comm_msg', 'req-1', { comm_id: 'c', data: {} })); // the widget's: not an output
  send(message('stream', '', { name: 'stdout', text: 'no parent' }));
  assert.equal(mine.model.outputs.length, 0);
  assert.equal(cell.model.outputs.length, 1);
  send(summary); // the view gone from the cell, the request's later outputs still go there
  send(message('execute_result', 'req-1', { data: { 'text/plain': '"archived"' }, metadata: {}, execution_count: 2 }));
  assert.deepEqual(cell.model.outputs.items.map((o) => o.output_type), ['display_data', 'execute_result']);
  send(message('status', 'req-1', { execution_state: 'idle' }));
  send(message('stream', 'req-1', { name: 'stdout', text: 'late' })); // nothing shows its view now
  assert.equal(cell.model.outputs.length, 2);
});

test('a marker naming the request in another cell too (copied or forged): no cell is given the outputs', () => {
  const forged = codeCell([live('req-1', 'flow-run-r1-a')]);
  const shows = codeCell([live('req-1', 'flow-run-r1-a')]);
  assert.equal(orphanCell([forged, shows], 'req-1'), null);
  assert.equal(orphanCell([shows, forged], 'req-1'), null);
  // Two views of one request in one cell (two runs of the cell) are that cell's.
  const both = codeCell([live('req-1', 'flow-run-r1-a'), live('req-1', 'flow-run-r2-b')]);
  assert.equal(orphanCell([both], 'req-1'), both);
  // The page's own request, its cell after a forged one naming it: left to its future.
  assert.equal(orphanCell([forged, codeCell([live('req-1', 'flow-run-r1-a')], 'req-1')], 'req-1'), null);
});
