// Python binding of xg2::TokenizerInfo as xg2_jax._core.TokenizerInfo. Instances live in a
// std::shared_ptr so that compiled grammars and matchers can keep the vocabulary alive.
#include "xg2/tokenizer.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "xg2/errors.h"

namespace xg2::bindings {
namespace {

// Converts a Python sequence of str (UTF-8) or bytes (taken as is) to strings. Done with the GIL
// held, before the native constructor runs without it.
std::vector<std::string> ConvertVocab(nb::handle seq) {
  PyObject* fast = PySequence_Fast(seq.ptr(), "encoded_vocab must be a sequence of str or bytes");
  if (fast == nullptr) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  std::vector<std::string> out(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    const char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyUnicode_Check(item)) {
      data = PyUnicode_AsUTF8AndSize(item, &size);
      if (data == nullptr) {
        Py_DECREF(fast);
        throw nb::python_error();
      }
    } else if (PyBytes_Check(item)) {
      char* buffer = nullptr;
      if (PyBytes_AsStringAndSize(item, &buffer, &size) != 0) {
        Py_DECREF(fast);
        throw nb::python_error();
      }
      data = buffer;
    } else {
      std::string type_name = Py_TYPE(item)->tp_name;
      Py_DECREF(fast);
      throw nb::type_error(("encoded_vocab[" + std::to_string(i) + "] must be str or bytes, not " + type_name).c_str());
    }
    out[static_cast<size_t>(i)].assign(data, static_cast<size_t>(size));
  }
  Py_DECREF(fast);
  return out;
}

nb::list BytesList(const std::vector<std::string>& strings) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(strings.size()));
  if (list == nullptr) throw nb::python_error();
  for (size_t i = 0; i < strings.size(); ++i) {
    PyObject* b = PyBytes_FromStringAndSize(strings[i].data(), static_cast<Py_ssize_t>(strings[i].size()));
    if (b == nullptr) {
      Py_DECREF(list);
      throw nb::python_error();
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), b);
  }
  return nb::steal<nb::list>(list);
}

std::shared_ptr<TokenizerInfo> MakeTokenizerInfo(nb::handle encoded_vocab, int vocab_type, int64_t vocab_size,
                                                 std::vector<int32_t> stop_token_ids,
                                                 std::vector<int32_t> special_token_ids, bool add_prefix_space) {
  if (vocab_type < 0 || vocab_type > 2) {
    throw Error(ErrorKind::kTokenizer,
                "vocab_type must be 0 (raw), 1 (byte_fallback) or 2 (byte_level), got " + std::to_string(vocab_type));
  }
  if (vocab_size < 0 || vocab_size > INT32_MAX) {
    throw Error(ErrorKind::kTokenizer, "vocab_size out of range: " + std::to_string(vocab_size));
  }
  std::vector<std::string> vocab = ConvertVocab(encoded_vocab);
  nb::gil_scoped_release release;
  return std::make_shared<TokenizerInfo>(vocab, static_cast<VocabType>(vocab_type), static_cast<int32_t>(vocab_size),
                                         std::move(stop_token_ids), std::move(special_token_ids), add_prefix_space);
}

void CheckId(const TokenizerInfo& self, int64_t id) {
  if (id < 0 || id >= self.vocab_size()) {
    throw nb::index_error(
        ("token id " + std::to_string(id) + " out of range [0, " + std::to_string(self.vocab_size()) + ")").c_str());
  }
}

}  // namespace

void BindTokenizer(nb::module_& m) {
  nb::class_<TokenizerInfo>(m, "TokenizerInfo", "Decoded vocabulary, special/stop tokens and byte trie (native).")
      .def(nb::new_(&MakeTokenizerInfo), nb::arg("encoded_vocab"), nb::arg("vocab_type"), nb::arg("vocab_size"),
           nb::arg("stop_token_ids"), nb::arg("special_token_ids"), nb::arg("add_prefix_space"),
           "encoded_vocab: sequence of str (or bytes); vocab_type: 0 raw, 1 byte_fallback, 2 "
           "byte_level; vocab_size 0 means len(encoded_vocab); empty stop_token_ids are "
           "detected from well-known names.")
      .def_prop_ro("vocab_type", [](const TokenizerInfo& self) { return static_cast<int>(self.vocab_type()); })
      .def_prop_ro("vocab_size", &TokenizerInfo::vocab_size)
      .def_prop_ro("num_tokens", &TokenizerInfo::num_tokens)
      .def_prop_ro("stop_token_ids", &TokenizerInfo::stop_token_ids)
      .def_prop_ro("special_token_ids", &TokenizerInfo::special_token_ids)
      .def_prop_ro("add_prefix_space", &TokenizerInfo::add_prefix_space)
      .def_prop_ro("fingerprint", &TokenizerInfo::fingerprint)
      .def(
          "decoded_vocab", [](const TokenizerInfo& self) { return BytesList(self.decoded_vocab()); },
          "The bytes of every token, indexed by id (special tokens: their text as UTF-8).")
      .def(
          "token_bytes",
          [](const TokenizerInfo& self, int64_t id) {
            CheckId(self, id);
            if (id >= self.num_tokens()) return nb::bytes("", 0);  // padding id: no token
            const std::string& s = self.token_bytes(static_cast<int32_t>(id));
            return nb::bytes(s.data(), s.size());
          },
          nb::arg("id"))
      .def(
          "is_special",
          [](const TokenizerInfo& self, int64_t id) {
            CheckId(self, id);
            return id >= self.num_tokens() || self.is_special(static_cast<int32_t>(id));
          },
          nb::arg("id"), "True for special, stop and padding ids (never text).")
      .def(
          "is_stop",
          [](const TokenizerInfo& self, int64_t id) {
            CheckId(self, id);
            return self.is_stop(static_cast<int32_t>(id));
          },
          nb::arg("id"))
      .def("trie_stats", [](const TokenizerInfo& self) {
        const TokenTrie& t = self.trie();
        int32_t max_depth = 0;
        for (int32_t d : t.depth) max_depth = std::max(max_depth, d);
        size_t bytes = (t.byte.capacity() + t.text_chars.capacity()) * sizeof(uint8_t) +
                       t.text_skeleton.capacity() * sizeof(TokenTrie::SkeletonNode) +
                       (t.depth.capacity() + t.subtree_end.capacity() + t.token_begin.capacity() +
                        t.sorted_tokens.capacity() + t.sorted_index.capacity() + t.text_up_to.capacity()) *
                           sizeof(int32_t);
        nb::dict d;
        d["num_nodes"] = t.num_nodes();
        d["num_normal_tokens"] = static_cast<int64_t>(t.sorted_tokens.size());
        d["max_depth"] = max_depth;
        d["memory_bytes"] = static_cast<int64_t>(bytes);
        return d;
      });
}

}  // namespace xg2::bindings
