/**
 * A CodeMirror 6 stream mode for Flow (language.md §1), mirroring the Pygments lexer
 * in flow_kernel/highlight.py rule for rule: the token names returned here are the
 * Pygments token classes without dots (`KeywordDeclaration` for
 * `Keyword.Declaration`), mapped to @lezer/highlight tags by `tokenTable`.
 *
 * The word lists come from words.ts, generated from the Python tables.
 */
import type { StreamParser, StringStream } from '@codemirror/language';
import { Tag, tags as t } from '@lezer/highlight';

import {
  BUILTIN_NAMES,
  CONSTANTS,
  CONTEXTUAL_KEYWORDS,
  DECLARATION_KEYWORDS,
  KEYWORDS,
  NAMESPACE_KEYWORDS,
  OPERATOR_WORDS,
  PSEUDO_NAMES,
  RESERVED,
  TYPE_NAMES
} from './words';

/** Pygments token class (dots removed) → highlight tags. */
export const TOKEN_TABLE = {
  CommentSingle: t.lineComment,
  CommentSpecial: t.docComment,
  NameDecorator: t.meta,
  Keyword: t.keyword,
  KeywordNamespace: t.moduleKeyword,
  KeywordDeclaration: t.definitionKeyword,
  KeywordConstant: t.bool,
  KeywordConstantNull: t.null,
  KeywordType: t.standard(t.typeName),
  OperatorWord: t.operatorKeyword,
  NameBuiltinPseudo: t.self,
  NameClass: t.definition(t.className),
  NameFunction: t.function(t.definition(t.variableName)),
  NameVariable: t.definition(t.variableName),
  NameBuiltin: t.standard(t.variableName),
  NameAttribute: t.propertyName,
  Name: t.variableName,
  StringDouble: t.string,
  StringEscape: t.escape,
  StringInterpol: t.special(t.brace),
  NumberInteger: t.integer,
  NumberFloat: t.float,
  NumberDuration: t.special(t.integer),
  Operator: t.operator,
  Punctuation: t.punctuation,
  Error: t.invalid
} satisfies { [name: string]: Tag };

/** A token name of this mode (a key of TOKEN_TABLE), or null for blanks. */
export type Token = keyof typeof TOKEN_TABLE | null;

/** What encloses the current position: a string, or an interpolation in one. */
type Frame =
  | { kind: 'str' } // "…", ends at the end of its line
  | { kind: 'tstr' } // """…""", may span lines
  | { kind: 'interp'; triple: boolean; depth: number }; // ${ … }; depth counts `{`

export interface FlowState {
  stack: Frame[];
  /** The next word is declared by `agent`/`team`/`type`, `workflow`/`tool`, `let`/`var`. */
  declares: 'NameClass' | 'NameFunction' | 'NameVariable' | null;
  /** The next word follows `.` or `?.` (a field name). */
  afterDot: boolean;
  /** The next word is `approval` after `requires`. */
  afterRequires: boolean;
  /** The rest of the line holds a magic's arguments. */
  magicArgs: boolean;
}

const WS = '[ \\t\\r\\f\\v\\ufeff]';
const ID = '[A-Za-z_][A-Za-z0-9_]*';
const END = '(?![A-Za-z0-9_])';
const NUM_END = '(?![A-Za-z0-9_]|\\.[0-9])';

// The `u` flag: a character outside the BMP is one character, as in Python.
const re = (source: string): RegExp => new RegExp('^(?:' + source + ')', 'u');

const MAGIC = re(WS + '*%%?[A-Za-z_][A-Za-z0-9_-]*');
const BLANKS = re(WS + '+');
const DURATION = re('[0-9]+(?:ms|s|m|h)' + NUM_END);
const FLOAT = re('[0-9]+(?:\\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)' + NUM_END);
const INTEGER = re('[0-9]+' + NUM_END);
const BAD_NUMBER = re('[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?:[A-Za-z0-9_]|\\.[0-9])+');
const WORD = re(ID);
const FIELD_AHEAD = re(WS + '*' + ID);
const KEY_AHEAD = re(WS + '*\\??' + WS + '*:');
const REQUIRES_APPROVAL_AHEAD = re(WS + '+approval' + END);
const OPERAND_AHEAD = re(WS + '+[\\[{("A-Za-z0-9_]');
const CONSTRAINT_AHEAD = re(WS + '*\\(' + WS + '*' + ID + WS + '*:');
const CALL_AHEAD = re(WS + '*\\(');
// The declared name follows on the same line.
const DECLARED_AHEAD = re(WS + '+' + ID + END);
// `fn NAME(` declares a function; `primary` is a word only before a string.
const FN_DECLARED_AHEAD = re(WS + '+' + ID + WS + '*\\(');
const STRING_AHEAD = re(WS + '+"');
const OPERATOR = re('\\[\\*\\]|\\.\\.\\.|\\?\\?|=>|->|==|!=|<=|>=|[-+*/%<>=|?]');
const PUNCTUATION = re('[()\\[\\],;:.]');
const ESCAPE = re('\\\\(?:[nt"\\\\$]|u[0-9a-fA-F]{4})');
const BAD_ESCAPE = re('\\\\[^\\n]?');
const STR_TEXT = re('[^"\\\\$]+');
const DOC_PREFIX = new RegExp('^' + WS + '*$', 'u');

const DECLARES = new Map<string, FlowState['declares']>([
  ['agent', 'NameClass'],
  ['team', 'NameClass'],
  ['type', 'NameClass'],
  ['workflow', 'NameFunction'],
  ['tool', 'NameFunction'],
  ['let', 'NameVariable'],
  ['var', 'NameVariable']
]);

/** Consume one character (both halves of a surrogate pair). */
function nextCodePoint(stream: StringStream): void {
  const ch = stream.next();
  if (ch && ch >= '\ud800' && ch <= '\udbff') {
    stream.eat(/[\udc00-\udfff]/);
  }
}

function top(state: FlowState): Frame | undefined {
  return state.stack[state.stack.length - 1];
}

/** At the end of a line, Pygments leaves a one-line string (or an interpolation in one)
 * and returns to the root state. */
function endOfLine(state: FlowState): void {
  const frame = top(state);
  if (frame && (frame.kind === 'str' || (frame.kind === 'interp' && !frame.triple))) {
    state.stack = [];
  }
  state.afterDot = false;
  state.afterRequires = false;
  state.magicArgs = false;
}

function stringToken(stream: StringStream, state: FlowState, triple: boolean): Token {
  if (triple ? stream.match('"""') : stream.match('"')) {
    state.stack.pop();
    return 'StringDouble';
  }
  if (stream.match(ESCAPE)) {
    return 'StringEscape';
  }
  if (stream.match(BAD_ESCAPE)) {
    return 'Error';
  }
  if (stream.match('${')) {
    state.stack.push({ kind: 'interp', triple, depth: 0 });
    return 'StringInterpol';
  }
  if (!stream.match(STR_TEXT)) {
    stream.next(); // a lone `"` in a triple-quoted string, or `$`
  }
  return 'StringDouble';
}

function wordToken(stream: StringStream, state: FlowState, word: string): Token {
  if (state.afterDot) {
    state.afterDot = false;
    return 'NameAttribute';
  }
  if (state.declares) {
    const declared = state.declares;
    state.declares = null;
    return declared;
  }
  if (state.afterRequires) {
    state.afterRequires = false;
    if (word === 'approval') {
      return 'Keyword';
    }
  }
  // A reserved word as an object key, type field or named argument: `{type: "x"}`.
  if (RESERVED.has(word) && !CONSTANTS.has(word) && stream.match(KEY_AHEAD, false)) {
    return 'Name';
  }
  if (DECLARES.has(word) && stream.match(DECLARED_AHEAD, false)) {
    state.declares = DECLARES.get(word) ?? null;
    return 'KeywordDeclaration';
  }
  if (word === 'fn' && stream.match(FN_DECLARED_AHEAD, false)) {
    state.declares = 'NameFunction';
    return 'KeywordDeclaration';
  }
  if (word === 'primary' && stream.match(STRING_AHEAD, false)) {
    return 'Keyword';
  }
  if (word === 'requires' && stream.match(REQUIRES_APPROVAL_AHEAD, false)) {
    state.afterRequires = true;
    return 'Keyword';
  }
  if (NAMESPACE_KEYWORDS.has(word)) {
    return 'KeywordNamespace';
  }
  if (DECLARATION_KEYWORDS.has(word)) {
    return 'KeywordDeclaration';
  }
  if (CONSTANTS.has(word)) {
    return word === 'null' ? 'KeywordConstantNull' : 'KeywordConstant';
  }
  if (OPERATOR_WORDS.has(word)) {
    return 'OperatorWord';
  }
  if (PSEUDO_NAMES.has(word)) {
    return 'NameBuiltinPseudo';
  }
  if (KEYWORDS.has(word)) {
    return 'Keyword';
  }
  if (CONTEXTUAL_KEYWORDS.has(word) && stream.match(OPERAND_AHEAD, false)) {
    return 'Keyword';
  }
  if (TYPE_NAMES.has(word) && stream.match(CONSTRAINT_AHEAD, false)) {
    return 'KeywordType';
  }
  if (BUILTIN_NAMES.has(word) && stream.match(CALL_AHEAD, false)) {
    return 'NameBuiltin';
  }
  if (TYPE_NAMES.has(word)) {
    return 'KeywordType';
  }
  return 'Name';
}

function codeToken(stream: StringStream, state: FlowState): Token {
  const frame = top(state);
  if (stream.match(BLANKS)) {
    return null;
  }
  const word = stream.match(WORD) as RegExpMatchArray | null;
  if (word) {
    return wordToken(stream, state, word[0]);
  }
  // Any other token ends a pending declaration or field name.
  state.declares = null;
  state.afterDot = false;
  state.afterRequires = false;
  if (stream.match('##', false) && DOC_PREFIX.test(stream.string.slice(0, stream.pos))) {
    stream.skipToEnd();
    return 'CommentSpecial';
  }
  if (stream.match('#')) {
    stream.skipToEnd();
    return 'CommentSingle';
  }
  if (stream.match('"""')) {
    state.stack.push({ kind: 'tstr' });
    return 'StringDouble';
  }
  if (stream.match('"')) {
    state.stack.push({ kind: 'str' });
    return 'StringDouble';
  }
  if (stream.match(DURATION)) {
    return 'NumberDuration';
  }
  if (stream.match(FLOAT)) {
    return 'NumberFloat';
  }
  if (stream.match(INTEGER)) {
    return 'NumberInteger';
  }
  if (stream.match(BAD_NUMBER)) {
    return 'Error';
  }
  if (stream.match('?.')) {
    state.afterDot = !!stream.match(FIELD_AHEAD, false);
    return 'Operator';
  }
  if (stream.peek() === '.' && stream.string.slice(stream.pos + 1).match(FIELD_AHEAD)) {
    stream.next();
    state.afterDot = true;
    return 'Punctuation';
  }
  if (frame && frame.kind === 'interp') {
    if (stream.match('{')) {
      frame.depth++;
      return 'Punctuation';
    }
    if (stream.match('}')) {
      if (frame.depth === 0) {
        state.stack.pop();
        return 'StringInterpol';
      }
      frame.depth--;
      return 'Punctuation';
    }
  } else if (stream.match('{') || stream.match('}')) {
    return 'Punctuation';
  }
  if (stream.match(OPERATOR)) {
    return 'Operator';
  }
  if (stream.match(PUNCTUATION)) {
    return 'Punctuation';
  }
  nextCodePoint(stream);
  return 'Error';
}

export const flowMode: StreamParser<FlowState> = {
  name: 'flow',
  startState: () => ({
    stack: [],
    declares: null,
    afterDot: false,
    afterRequires: false,
    magicArgs: false
  }),
  copyState: (state: FlowState) => ({
    ...state,
    stack: state.stack.map(frame => ({ ...frame }))
  }),
  token(stream: StringStream, state: FlowState): string | null {
    if (stream.sol()) {
      endOfLine(state);
      if (state.stack.length === 0 && stream.match(MAGIC)) {
        state.magicArgs = true;
        state.declares = null;
        return 'NameDecorator';
      }
    }
    if (state.magicArgs) {
      stream.skipToEnd();
      return null;
    }
    const frame = top(state);
    if (frame && frame.kind !== 'interp') {
      return stringToken(stream, state, frame.kind === 'tstr');
    }
    return codeToken(stream, state);
  },
  blankLine: (state: FlowState) => endOfLine(state),
  languageData: {
    commentTokens: { line: '#' },
    closeBrackets: { brackets: ['(', '[', '{', '"'] }
  },
  tokenTable: TOKEN_TABLE
};
