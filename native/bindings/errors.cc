// Maps the core's typed C++ errors to Python exception classes. The classes are handed over
// by the Python package at import (_set_error_classes): the native module imports no Python
// module by name, and until they are set errors raise as builtin exceptions.
#include "xg2/errors.h"

#include <cstring>
#include <string>
#include <system_error>

#include "bindings.h"

namespace xg2::bindings {
namespace {

// Class name -> class, set once by xg2_jax._src.errors; kept for the life of the process
// (never released: exceptions may be raised while the interpreter shuts down).
PyObject* g_error_classes = nullptr;

void RaisePython(const char* class_name, const char* message, int line, int column) {
  PyObject* found = g_error_classes ? PyDict_GetItemString(g_error_classes, class_name) : nullptr;
  if (found == nullptr) {
    PyErr_SetString(PyExc_ValueError, message);
    return;
  }
  nb::object cls = nb::borrow(found);
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
    case ErrorKind::kUnsupported: return "UnsupportedSchemaError";
  }
  return "XG2Error";
}

}  // namespace

void BindErrors(nb::module_& m) {
  m.def(
      "_set_error_classes",
      [](nb::dict classes) {
        for (const char* name :
             {"XG2Error", "GrammarError", "GrammarSyntaxError", "TokenizerError", "MatcherStateError",
              "InvalidArgumentError", "LimitExceededError", "StructuralTagError", "UnsupportedSchemaError"}) {
          if (!classes.contains(name)) {
            throw Error(ErrorKind::kInvalidArgument, std::string("error classes lack ") + name);
          }
        }
        Py_XDECREF(g_error_classes);
        g_error_classes = nb::dict(classes).release().ptr();
      },
      nb::arg("classes"), "Sets the Python classes the core's typed errors raise as (by class name).");
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
      const bool resources =
          e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory;
      PyErr_SetString(resources ? PyExc_MemoryError : PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace xg2::bindings
