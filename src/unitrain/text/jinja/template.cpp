// Runs a parsed template: statements write into the output, expressions compute Values with
// Python's semantics, scopes as Jinja2 keeps them (a for loop, macro call, with, filter, set or
// generation block has its own; if does not; namespace() objects are shared by reference).
#include "unitrain/text/jinja/template.h"

#include <climits>
#include <cmath>
#include <ctime>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/nodes.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {
namespace {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  Scope* parent = nullptr;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

/// Every name and statement of `body`, depth first.
void visit(const Body& body, const std::function<void(const Stmt&)>& on_stmt,
           const std::function<void(const Expr&)>& on_expr) {
  std::function<void(const Expr*)> expr = [&](const Expr* e) {
    if (!e) return;
    on_expr(*e);
    for (const auto& a : e->args) expr(a.get());
    for (const auto& k : e->keywords) expr(k.second.get());
  };
  for (const auto& s : body) {
    on_stmt(*s);
    expr(s->expr.get());
    expr(s->filter.get());
    for (const auto& p : s->params) expr(p.second.get());
    visit(s->body, on_stmt, on_expr);
    visit(s->else_body, on_stmt, on_expr);
  }
}

bool defines_macro(const Body& body) {
  bool found = false;
  visit(
      body, [&](const Stmt& s) { found |= s.kind == Stmt::Kind::Macro; }, [](const Expr&) {});
  return found;
}

bool uses_name(const Body& body, const std::string& name) {
  bool found = false;
  visit(
      body, [](const Stmt&) {},
      [&](const Expr& e) { found |= e.kind == Expr::Kind::Name && e.name == name; });
  return found;
}

class Renderer {
 public:
  Renderer(const RenderLimits& limits, std::optional<int64_t> now) : limits_(limits), now_(now) {}

  Rendered run(const Body& body, const nlohmann::ordered_json& variables) {
    Scope& globals = new_scope(nullptr);
    add_globals(globals);
    Scope& context = new_scope(&globals);
    for (const auto& [name, value] : variables.items()) context.vars[name] = from_json(value);
    Rendered out;
    main_ = &out.text;
    spans_ = &out.generation;
    exec(body, context, out.text);
    return out;
  }

 private:
  Scope& new_scope(Scope* parent) {
    scopes_.emplace_back();
    scopes_.back().parent = parent;
    return scopes_.back();
  }

  void step() {
    if (++steps_ > limits_.steps) {
      fail("LimitExceeded", "the template ran past " + std::to_string(limits_.steps) + " steps");
    }
  }

  void write(std::string& out, const std::string& text) {
    out += text;
    if (static_cast<int64_t>(out.size()) > limits_.output_bytes) {
      fail("LimitExceeded",
           "the output grew past " + std::to_string(limits_.output_bytes) + " bytes");
    }
  }

  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const auto& s : body) {
      Flow flow;
      try {
        flow = exec(*s, scope, out);
      } catch (EvalError& e) {
        if (!e.line) e.line = s->line;
        throw;
      }
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s, Scope& scope, std::string& out) {
    step();
    switch (s.kind) {
      case Stmt::Kind::Text:
        write(out, s.text);
        return Flow::Normal;
      case Stmt::Kind::Print:
        write(out, str(eval(*s.expr, scope)));
        return Flow::Normal;
      case Stmt::Kind::If:
        return exec(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope, out);
      case Stmt::Kind::For:
        return exec_for(s, scope, out);
      case Stmt::Kind::Set:
        exec_set(s, scope);
        return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        Value v = Value::from(render_block(s.body, scope));
        if (s.filter) v = filter_chain(*s.filter, v, scope);
        scope.vars[s.targets[0]] = v;
        return Flow::Normal;
      }
      case Stmt::Kind::Macro:
        scope.vars[s.name] = macro(s, scope);
        return Flow::Normal;
      case Stmt::Kind::FilterBlock:
        write(out, str(filter_chain(*s.filter, Value::from(render_block(s.body, scope)), scope)));
        return Flow::Normal;
      case Stmt::Kind::With: {
        Scope& inner = new_scope(&scope);
        for (const auto& [name, e] : s.params) inner.vars[name] = eval(*e, scope);
        return exec(s.body, inner, out);
      }
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
      case Stmt::Kind::Generation: {
        if (&out != main_) {
          fail("Unsupported",
               "{% generation %} inside a macro, a filter or set block: its text's "
               "place in the output is not known");
        }
        const size_t begin = out.size();
        const Flow flow = exec(s.body, new_scope(&scope), out);
        spans_->emplace_back(begin, out.size());
        return flow;
      }
    }
    return Flow::Normal;
  }

  std::string render_block(const Body& body, Scope& scope) {
    std::string text;
    exec(body, new_scope(&scope), text);
    return text;
  }

  void unpack(Scope& scope, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = v;
      return;
    }
    const List items = iterate(v);
    if (items.size() != targets.size()) {
      fail("ValueError", std::string(items.size() < targets.size() ? "not enough" : "too many") +
                             " values to unpack (expected " + std::to_string(targets.size()) + ")");
    }
    for (size_t i = 0; i < items.size(); ++i) scope.vars[targets[i]] = items[i];
  }

  void exec_set(const Stmt& s, Scope& scope) {
    const Value v = eval(*s.expr, scope);
    if (s.attr.empty()) {
      unpack(scope, s.targets, v);
      return;
    }
    const Value* ns = scope.find(s.targets[0]);
    if (!ns || ns->kind != Value::Kind::Namespace) {
      fail("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
    }
    ns->dict->set(s.attr, v);
  }

  Flow exec_for(const Stmt& s, Scope& scope, std::string& out) {
    const List all = iterate(eval(*s.expr, scope));
    List items;
    for (const Value& item : all) {
      if (s.filter) {
        step();
        Scope test;
        test.parent = &scope;
        unpack(test, s.targets, item);
        if (!eval(*s.filter, test).truthy()) continue;
      }
      items.push_back(item);
    }
    if (items.empty()) return exec(s.else_body, new_scope(&scope), out);
    const int64_t n = static_cast<int64_t>(items.size());
    auto last_changed = std::make_shared<std::optional<List>>();  // loop.changed's last arguments
    // Each pass has a scope of its own (a set in one pass is gone in the next); kept to the end
    // of the render only where a macro defined in the body may hold on to it.
    const bool keep = defines_macro(s.body);
    for (int64_t i = 0; i < n; ++i) {
      step();
      Scope local;
      Scope& pass = keep ? new_scope(&scope) : local;
      pass.parent = &scope;
      unpack(pass, s.targets, items[static_cast<size_t>(i)]);
      pass.vars["loop"] = loop_object(items, i, last_changed);
      if (exec(s.body, pass, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  static Value loop_object(const List& items, int64_t i,
                           const std::shared_ptr<std::optional<List>>& last_changed) {
    const int64_t n = static_cast<int64_t>(items.size());
    Dict d;
    d.set("index", Value::from(i + 1));
    d.set("index0", Value::from(i));
    d.set("revindex", Value::from(n - i));
    d.set("revindex0", Value::from(n - i - 1));
    d.set("first", Value::from(i == 0));
    d.set("last", Value::from(i == n - 1));
    d.set("length", Value::from(n));
    d.set("depth", Value::from(int64_t{1}));
    d.set("depth0", Value::from(int64_t{0}));
    d.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)]
                            : Value::undefined("there is no previous item"));
    d.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)]
                                : Value::undefined("there is no next item"));
    d.set("cycle", Value::function_of("cycle", [i](Args& args) {
            if (args.positional.empty()) fail("TypeError", "no items for cycling given");
            return args.positional[static_cast<size_t>(i) % args.positional.size()];
          }));
    d.set("changed", Value::function_of("changed", [last_changed](Args& args) {
            const List now = args.positional;
            const bool changed =
                !*last_changed || !equal(Value::from(now), Value::from(**last_changed));
            *last_changed = now;
            return Value::from(changed);
          }));
    return Value::from(std::move(d), Value::Kind::Loop);
  }

  Value macro(const Stmt& m, Scope& defining) {
    const bool varargs = uses_name(m.body, "varargs"), kwargs = uses_name(m.body, "kwargs");
    return Value::function_of(m.name, [this, &m, &defining, varargs, kwargs](Args& args) {
      if (++depth_ > limits_.depth)
        fail("LimitExceeded", "macros called " + std::to_string(limits_.depth) + " deep");
      Scope& inner = new_scope(&defining);
      List extra;
      for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < m.params.size()) {
          inner.vars[m.params[i].first] = args.positional[i];
        } else {
          extra.push_back(args.positional[i]);
        }
      }
      if (!extra.empty() && !varargs) {
        fail("TypeError", "macro '" + m.name + "' takes not more than " +
                              std::to_string(m.params.size()) + " argument(s)");
      }
      Dict more;
      for (const auto& [key, value] : args.keywords) {
        const bool known = std::any_of(m.params.begin(), m.params.end(),
                                       [&](const auto& p) { return p.first == key; });
        if (known) {
          inner.vars[key] = value;
        } else if (kwargs) {
          more.set(key, value);
        } else {
          fail("TypeError", "macro '" + m.name + "' takes no keyword argument '" + key + "'");
        }
      }
      for (const auto& [name, fallback] : m.params) {
        if (inner.vars.count(name)) continue;
        inner.vars[name] = fallback ? eval(*fallback, inner)
                                    : Value::undefined("parameter '" + name + "' was not provided");
      }
      inner.vars["varargs"] = Value::from(std::move(extra), Value::Kind::Tuple);
      inner.vars["kwargs"] = Value::from(std::move(more));
      std::string text;
      exec(m.body, inner, text);
      --depth_;
      return Value::from(std::move(text));
    });
  }

  Args call_args(const Expr& e, size_t first, Scope& scope) {
    Args args;
    for (size_t i = first; i < e.args.size(); ++i)
      args.positional.push_back(eval(*e.args[i], scope));
    for (const auto& [key, value] : e.keywords)
      args.keywords.emplace_back(key, eval(*value, scope));
    return args;
  }

  /// A filter chain of a {% filter %} or block set: its innermost operand is `value`.
  Value filter_chain(const Expr& f, const Value& value, Scope& scope) {
    const Value operand = f.args[0] ? filter_chain(*f.args[0], value, scope) : value;
    Args args = call_args(f, 1, scope);
    return apply_filter(f.name, operand, args);
  }

  Value eval(const Expr& e, Scope& scope) {
    try {
      return eval_node(e, scope);
    } catch (EvalError& err) {
      if (!err.line) err.line = e.line;
      throw;
    }
  }

  /// {key: value, ...}: keys are strings (the dicts chat templates build).
  Value eval_dict(const Expr& e, Scope& scope) {
    Dict d;
    for (size_t i = 0; i < e.args.size(); i += 2) {
      const Value key = eval(*e.args[i], scope);
      if (!key.is_string())
        fail("Unsupported", "a dict key that is not a string (" + repr(key) + ")");
      d.set(key.text, eval(*e.args[i + 1], scope));
    }
    return Value::from(std::move(d));
  }

  Value eval_call(const Expr& e, Scope& scope) {
    const Value callee = eval(*e.args[0], scope);
    Args args = call_args(e, 1, scope);
    callee.defined();
    if (callee.kind != Value::Kind::Callable)
      fail("TypeError", "'" + callee.type_name() + "' object is not callable");
    step();
    return callee.function->call(args);
  }

  /// Unary - and +.
  Value eval_sign(const Expr& e, Scope& scope) {
    const Value v = eval(*e.args[0], scope);
    v.defined();
    const bool neg = e.kind == Expr::Kind::Neg;
    if (v.kind == Value::Kind::Float) return Value::from(neg ? -v.real : v.real);
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) {  // 0 - i: its overflow
      return neg ? arithmetic("-", Value::from(int64_t{0}), v) : Value::from(to_int(v, "+"));
    }
    fail("TypeError", std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" +
                          v.type_name() + "'");
  }

  /// a < b <= c ...: each pair in turn, false at the first that does not hold.
  Value eval_compare(const Expr& e, Scope& scope) {
    Value left = eval(*e.args[0], scope);
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right = eval(*e.args[i + 1], scope);
      const std::string& op = e.ops[i];
      bool holds;
      if (op == "==" || op == "!=") {
        holds = equal(left, right) == (op == "==");
      } else if (op == "in" || op == "not in") {
        holds = contains(right, left) == (op == "in");
      } else {
        holds = compare(left, op, right);
      }
      if (!holds) return Value::from(false);
      left = std::move(right);
    }
    return Value::from(true);
  }

  Value eval_node(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case Expr::Kind::Literal:
        return e.value;
      case Expr::Kind::Name: {
        const Value* v = scope.find(e.name);
        return v ? *v : Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a, scope));
        return Value::from(std::move(items),
                           e.kind == Expr::Kind::List ? Value::Kind::List : Value::Kind::Tuple);
      }
      case Expr::Kind::Dict:
        return eval_dict(e, scope);
      case Expr::Kind::Attr:
        return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::Kind::Item:
        return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Kind::Slice:
        return slice(e, scope);
      case Expr::Kind::Call:
        return eval_call(e, scope);
      case Expr::Kind::Filter: {
        const Value operand = eval(*e.args[0], scope);
        Args args = call_args(e, 1, scope);
        return apply_filter(e.name, operand, args);
      }
      case Expr::Kind::Test: {
        const Value operand = eval(*e.args[0], scope);
        Args args = call_args(e, 1, scope);
        return Value::from(apply_test(e.name, operand, args) != e.negated);
      }
      case Expr::Kind::Neg:
      case Expr::Kind::Pos:
        return eval_sign(e, scope);
      case Expr::Kind::Not:
        return Value::from(!eval(*e.args[0], scope).truthy());
      case Expr::Kind::Binary:
        return arithmetic(e.name, eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Kind::Concat: {
        std::string out;
        for (const auto& a : e.args) out += str(eval(*a, scope));
        return Value::from(std::move(out));
      }
      case Expr::Kind::Compare:
        return eval_compare(e, scope);
      case Expr::Kind::And: {
        Value left = eval(*e.args[0], scope);
        return left.truthy() ? eval(*e.args[1], scope) : left;
      }
      case Expr::Kind::Or: {
        Value left = eval(*e.args[0], scope);
        return left.truthy() ? left : eval(*e.args[1], scope);
      }
      case Expr::Kind::Cond:
        if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    return Value();
  }

  Value slice(const Expr& e, Scope& scope) {
    const Value target = eval(*e.args[0], scope);
    target.defined();
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int i = 0; i < 3; ++i) {
      if (!e.args[static_cast<size_t>(i) + 1]) continue;
      const Value v = eval(*e.args[static_cast<size_t>(i) + 1], scope);
      if (v.is(Value::Kind::None)) continue;
      bounds[i] = to_int(v, "slice indices");
      given[i] = true;
    }
    if (bounds[2] == 0) fail("ValueError", "slice step cannot be zero");
    if (target.is_string())
      return Value::from(
          py::slice(target.text, given[0], bounds[0], given[1], bounds[1], bounds[2]));
    if (!target.is_sequence())
      return Value::undefined("'" + target.type_name() + "' object is not subscriptable");
    List items;
    for (int64_t i :
         py::slice_positions(length(target), given[0], bounds[0], given[1], bounds[1], bounds[2])) {
      items.push_back((*target.list)[static_cast<size_t>(i)]);
    }
    return Value::from(std::move(items), target.kind);
  }

  void add_globals(Scope& g) {
    g.vars["range"] = Value::function_of("range", [](Args& args) {
      bind_args("range", Args{{}, args.keywords}, {});
      if (args.positional.empty() || args.positional.size() > 3)
        fail("TypeError", "range expected 1 to 3 arguments");
      int64_t start = 0, stop = 0, by = 1;
      if (args.positional.size() == 1) {
        stop = to_int(args.positional[0], "range");
      } else {
        start = to_int(args.positional[0], "range");
        stop = to_int(args.positional[1], "range");
        if (args.positional.size() == 3) by = to_int(args.positional[2], "range");
      }
      if (by == 0) fail("ValueError", "range() arg 3 must not be zero");
      const int64_t n = by > 0 ? (stop > start ? (stop - start + by - 1) / by : 0)
                               : (start > stop ? (start - stop - by - 1) / -by : 0);
      if (n > 100000) {
        fail("OverflowError",
             "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      }
      List items;
      for (int64_t i = 0; i < n; ++i) items.push_back(Value::from(start + i * by));
      Value out = Value::from(std::move(items));
      out.text = "range(" + std::to_string(start) + ", " + std::to_string(stop) +
                 (by != 1 ? ", " + std::to_string(by) : "") + ")";  // how Python prints it
      return out;
    });
    auto dict_of = [](Args& args, const char* name) {
      Dict d;
      if (args.positional.size() > 1)
        fail("TypeError", std::string(name) + " expected at most 1 argument");
      if (!args.positional.empty()) {
        const Value& from = args.positional[0];
        if (!from.is_mapping())
          fail("Unsupported", std::string(name) + "() from a " + from.type_name());
        d = *from.dict;
      }
      for (const auto& [k, v] : args.keywords) d.set(k, v);
      return d;
    };
    g.vars["namespace"] = Value::function_of("namespace", [dict_of](Args& args) {
      return Value::from(dict_of(args, "namespace"), Value::Kind::Namespace);
    });
    g.vars["dict"] = Value::function_of(
        "dict", [dict_of](Args& args) { return Value::from(dict_of(args, "dict")); });
    g.vars["raise_exception"] = Value::function_of("raise_exception", [](Args& args) -> Value {
      const auto a = bind_args("raise_exception", args, {{"message", std::nullopt}});
      fail("TemplateError", str(a[0]));
    });
    g.vars["strftime_now"] = Value::function_of("strftime_now", [this](Args& args) {
      const auto a = bind_args("strftime_now", args, {{"format", std::nullopt}});
      const std::time_t t = now_ ? static_cast<std::time_t>(*now_) : std::time(nullptr);
      std::tm local{};
      localtime_r(&t, &local);
      const std::string format = str(a[0]);
      if (format.empty()) return Value::from(std::string());
      std::string buf(256 + format.size() * 8, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
      buf.resize(n);
      return Value::from(buf);
    });
    for (const char* name : {"lipsum", "cycler", "joiner"}) {
      g.vars[name] = Value::function_of(name, [name](Args&) -> Value {
        fail("Unsupported", std::string(name) + "() is Jinja that unitrain does not run");
      });
    }
  }

  RenderLimits limits_;
  std::optional<int64_t> now_;
  std::deque<Scope> scopes_;
  std::string* main_ = nullptr;
  std::vector<std::pair<size_t, size_t>>* spans_ = nullptr;
  int64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace

Template::Template(std::string_view source, std::string what) : what_(std::move(what)) {
  try {
    body_ = std::make_shared<const Body>(parse(std::string(source)));
  } catch (const EvalError& e) {
    throw JinjaError(e.type, e.line, e.message, what_);
  }
  visit(
      *body_, [&](const Stmt& s) { generation_ |= s.kind == Stmt::Kind::Generation; },
      [&](const Expr& e) { clock_ |= e.kind == Expr::Kind::Name && e.name == "strftime_now"; });
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

Rendered Template::render(const nlohmann::ordered_json& variables, std::optional<int64_t> now,
                          const RenderLimits& limits) const {
  if (!variables.is_object())
    throw JinjaError("TypeError", 0, "the variables are not a JSON object", what_);
  try {
    return Renderer(limits, now).run(*body_, variables);
  } catch (const EvalError& e) {
    throw JinjaError(e.type, e.line, e.message, what_);
  } catch (const std::exception& e) {  // a library's own (a conversion, an allocation): said
    throw JinjaError("Unsupported", 0, e.what(), what_);
  }
}

bool Template::marks_generation() const { return generation_; }
bool Template::reads_clock() const { return clock_; }

}  // namespace unitrain::jinja
