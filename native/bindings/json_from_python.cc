#include "json_from_python.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace xg2::bindings {

namespace {

bool Utf8(PyObject* s, std::string* out) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s, &size);
  if (data == nullptr) {  // a lone surrogate: json.dumps escapes it, the parser refuses it located
    PyErr_Clear();
    return false;
  }
  out->assign(data, static_cast<size_t>(size));
  return true;
}

// Numbers keep the literal json.dumps would write (int: decimal, float: repr) and its value
// as the parser reads it.
bool Number(PyObject* o, JsonValue* out) {
  std::string literal;
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
      literal = std::to_string(v);
    } else {
      PyErr_Clear();
      PyObject* text = PyObject_Str(o);
      if (text == nullptr) {
        PyErr_Clear();
        return false;
      }
      const bool ok = Utf8(text, &literal);
      Py_DECREF(text);
      if (!ok) return false;
    }
  } else {
    const double v = PyFloat_AS_DOUBLE(o);
    if (!std::isfinite(v)) return false;  // json.dumps writes NaN / Infinity
    char* repr = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    if (repr == nullptr) {
      PyErr_Clear();
      return false;
    }
    literal = repr;
    PyMem_Free(repr);
  }
  const double value = std::strtod(literal.c_str(), nullptr);
  *out = JsonValue::Number(value, std::move(literal));
  return true;
}

bool Convert(PyObject* o, int depth_left, JsonValue* out) {
  if (o == Py_None) {
    *out = JsonValue();
    return true;
  }
  if (o == Py_True || o == Py_False) {
    *out = JsonValue::Bool(o == Py_True);
    return true;
  }
  if (PyUnicode_CheckExact(o)) {
    std::string s;
    if (!Utf8(o, &s)) return false;
    *out = JsonValue::String(std::move(s));
    return true;
  }
  if (PyLong_CheckExact(o) || PyFloat_CheckExact(o)) return Number(o, out);
  const bool list = PyList_CheckExact(o), tuple = PyTuple_CheckExact(o);
  if (list || tuple) {
    if (depth_left <= 0) return false;
    const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
    std::vector<JsonValue> items(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
      if (!Convert(item, depth_left - 1, &items[static_cast<size_t>(i)])) return false;
    }
    *out = JsonValue::Array(std::move(items));
    return true;
  }
  if (PyDict_Check(o)) {
    if (depth_left <= 0) return false;
    std::vector<std::pair<std::string, JsonValue>> members;
    members.reserve(static_cast<size_t>(PyDict_Size(o)));
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(o, &pos, &key, &value)) {
      if (!PyUnicode_CheckExact(key)) return false;  // json.dumps converts or refuses it
      members.emplace_back();
      if (!Utf8(key, &members.back().first) || !Convert(value, depth_left - 1, &members.back().second)) {
        return false;
      }
    }
    *out = JsonValue::Object(std::move(members));
    return true;
  }
  return false;
}

}  // namespace

bool JsonFromPython(nanobind::handle obj, int max_depth, JsonValue* out) { return Convert(obj.ptr(), max_depth, out); }

}  // namespace xg2::bindings
