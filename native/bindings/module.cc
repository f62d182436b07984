// Entry point of the native module xg2_jax._core.
#include <exception>

#include "bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "xg2-jax native core: grammars, tokenizer vocabularies, Earley matcher, token masks";
  // The importing thread's C++ exception state, allocated now rather than at its first
  // exception (glibc aborts if that allocation fails, e.g. on the std::bad_alloc itself).
  (void)std::uncaught_exceptions();
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
