// Maps the core's typed C++ errors to the Python classes of xg2_jax._src.errors.
#include <cstring>
#include <string>
#include <system_error>

#include "bindings.h"
#include "xg2/errors.h"

namespace xg2::bindings {
namespace {

void RaisePython(const char* class_name, const char* message, int line, int column) {
  nb::object cls;
  try {
    cls = nb::module_::import_("xg2_jax._src.errors").attr(class_name);
  } catch (...) {
    PyErr_SetString(PyExc_ValueError, message);
    return;
  }
  // Messages may quote input bytes that are not valid UTF-8: decode with replacement.
  nb::object text = nb::steal(PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace"));
  if (!text.is_valid()) {
    PyErr_Clear();
    text = nb::str("(undecodable error message)");
  }
  nb::object exc = line > 0 ? cls(text, line, column) : cls(text);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

const char* ClassFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kGrammarSyntax: return "GrammarSyntaxError";
    case ErrorKind::kGrammarSemantic: return "GrammarError";
    case ErrorKind::kTokenizer: return "TokenizerError";
    case ErrorKind::kMatcherState: return "MatcherStateError";
    case ErrorKind::kInvalidArgument: return "InvalidArgumentError";
    case ErrorKind::kLimitExceeded: return "LimitExceededError";
    case ErrorKind::kStructuralTag: return "StructuralTagError";
  }
  return "XG2Error";
}

}  // namespace

void BindErrors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const SyntaxError& e) {
      RaisePython("GrammarSyntaxError", e.what(), e.line(), e.column());
    } catch (const Error& e) {
      RaisePython(ClassFor(e.kind()), e.what(), 0, 0);
    } catch (const BudgetExceeded& e) {
      RaisePython("LimitExceededError", e.what(), 0, 0);
    } catch (const std::system_error& e) {
      // Out of threads or memory for one (std::thread): the process is out of resources.
      const bool resources = e.code() == std::errc::resource_unavailable_try_again ||
                             e.code() == std::errc::not_enough_memory;
      PyErr_SetString(resources ? PyExc_MemoryError : PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace xg2::bindings
