// Entry point of the native module xg2_jax._core.
#include "bindings.h"
#include "support/thread_state.h"

NB_MODULE(_core, m) {
  m.doc() = "xg2-jax native core: grammars, tokenizer vocabularies, Earley matcher, token masks";
  xg2::PrepareThreadForExceptions();  // the importing thread
  xg2::bindings::BindErrors(m);
  xg2::bindings::BindTokenizer(m);
  xg2::bindings::BindGrammar(m);
  xg2::bindings::BindMatcher(m);
  xg2::bindings::BindRegex(m);
  xg2::bindings::BindLark(m);
  xg2::bindings::BindJsonSchema(m);
  xg2::bindings::BindBatch(m);
  xg2::bindings::BindStructuralTag(m);
}
