-- The comment block directly above a symbol (JSDoc, Go and Rust doc comments,
-- Javadoc): often the best description of what the code does, so it feeds the
-- symbol's lexical terms and its embedding text, outside its line range.
alter table codesift.code_symbols add column doc text;
