// Run the CodeMirror mode (src/mode.ts, transpiled on the fly) over texts and print
// its tokens, so tests/test_highlight.py can compare them with the Pygments lexer.
//
//   echo '["let x = 1"]' | node scripts/tokens.cjs
//   → [[["KeywordDeclaration","let"],[null," "],["NameVariable","x"],…,[null,"\n"]]]
//
// Each text is split into lines as CodeMirror does; a line end is reported as
// [null, "\n"]. Needs `npm ci` (typescript and @codemirror/language).
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2019 },
    fileName: filename
  });
  module._compile(outputText, filename);
};

const { StringStream } = require('@codemirror/language');
const { flowMode } = require(path.join(__dirname, '..', 'src', 'mode.ts'));

function tokenize(text) {
  const state = flowMode.startState(2);
  const out = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (line === '') {
      flowMode.blankLine(state, 2);
    }
    const stream = new StringStream(line, 4, 2);
    while (!stream.eol()) {
      stream.start = stream.pos;
      const style = flowMode.token(stream, state);
      if (stream.pos <= stream.start) {
        throw new Error(`no progress at ${stream.pos} in ${JSON.stringify(line)}`);
      }
      out.push([style, stream.current()]);
    }
    if (i < lines.length - 1) {
      out.push([null, '\n']);
    }
  });
  return out;
}

const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(texts.map(tokenize)));
