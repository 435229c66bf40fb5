// SPDX-License-Identifier: Apache-2.0
// The syntax tree of a Fault Tolerant Shell script (`backoff script FILE`), as the parser builds it
// and the interpreter walks it. The language is ftsh's core (Thain and Livny, "The Ethernet
// Approach to Grid Computing", HPDC 2003; the ftsh Technical Manual, 2004):
//
//   # fetch a file from any mirror, retrying for up to an hour
//   try for 1 hour every 30 seconds
//     forany host in mirror1 mirror2 "mirror 3"
//       curl -fsS -o out.tgz "https://${host}/pkg.tgz"
//     end
//   catch
//     echo "no mirror answered" > /dev/stderr
//     failure
//   end
//
// Quoting is resolved here: a word is a list of parts, each literal text or a variable reference,
// and remembers which parts were quoted. Variables are expanded only when the interpreter runs the
// statement, since loops rebind them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backoff/duration.hpp"

namespace backoff::tool::script {

// One piece of a word: literal text, or the name of a variable ("${host}" or "$host").
struct word_part {
  bool variable = false;
  bool quoted = false;  // inside '...' or "..." (a variable inside "..." is quoted)
  std::string text;     // the literal text, or the variable's name
  bool operator==(const word_part&) const = default;
};

// A shell word after quote removal: `"a b"c${x}` is three parts.
struct word {
  std::vector<word_part> parts;
  bool operator==(const word&) const = default;
};

// `<`, `>`, `>>`, `2>`, `2>>`, `2>&1`, `>&2` and the like, on a simple command.
struct redirect {
  enum class kind : std::uint8_t {
    read,       // fd < file
    write,      // fd > file   (truncate)
    append,     // fd >> file
    duplicate,  // fd >& other_fd
  };
  kind how = kind::read;
  int fd = 0;         // the descriptor redirected: 0 for `<`, 1 for `>` unless a digit precedes it
  word target;        // the file, for read/write/append
  int other_fd = -1;  // for duplicate
  bool operator==(const redirect&) const = default;
};

struct statement;
using block = std::vector<statement>;

// `cmd arg... [redirections]`: runs an external program (a failure fails the enclosing group).
struct command {
  std::vector<word> argv;  // at least one word
  std::vector<redirect> redirects;
  int line = 0;
};

// `NAME=value`: sets a shell variable (the value is one word, never split).
struct assignment {
  std::string name;
  word value;
  int line = 0;
};

// `try [for] LIMITS [every DURATION] ... [catch ...] end`. Absent limits mean one attempt, as in
// ftsh; `times` and `within` may both be set ("for 3 days or 100 times"): the first reached ends.
struct try_block {
  std::optional<std::uint32_t> times;  // `N times` (N >= 1)
  std::optional<duration> within;      // `for 1 hour`: a deadline relative to the try's start
  std::optional<duration> every;       // start-to-start period instead of exponential backoff
  block body;
  std::optional<block> handler;  // the `catch` group: runs only when every attempt failed
  int line = 0;
};

// `for|forany|forall VAR in ITEM... NEWLINE ... end`.
struct loop {
  enum class kind : std::uint8_t {
    each,  // `for`: items in order, one at a time; the first failure fails the loop
    any,   // `forany`: items in order until one succeeds; VAR keeps the winning item
    all,   // `forall`: every item at once; the first failure cancels the others
  };
  kind how = kind::each;
  std::string variable;
  std::vector<word> items;  // an unquoted variable expands to its blank-separated fields here
  block body;
  int line = 0;
};

// `success` or `failure`: succeeds or fails the enclosing group on purpose.
struct builtin {
  bool succeed = true;
  int line = 0;
};

struct statement {
  std::variant<command, assignment, try_block, loop, builtin> node;
};

struct script {
  std::string file;  // as given to the parser, for messages
  block body;
};

}  // namespace backoff::tool::script
