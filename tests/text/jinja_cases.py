#!/usr/bin/python3
"""Reference renderings for unitrain's chat-template (Jinja) renderer, from Python's jinja2.

/usr/bin/python3 tests/text/jinja_cases.py writes tests/text/jinja_cases.json next to it: small
templates, one feature each, rendered in the environment transformers renders chat templates in
(transformers' chat_template_utils.py): an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension and the {% generation %} tracker, tojson replaced by
json.dumps (ensure_ascii off), raise_exception and strftime_now as globals. strftime_now reads a
frozen clock, 2024-07-26 10:30:00 (a Friday), so the file is the same on every run.

Each case is {"name", "template", "vars", then "output" or "error"}; a template holding
{% generation %} also gets "spans" (Python str indices, i.e. code points) and "spans_utf8"
(byte offsets into the output's UTF-8), as transformers' render_with_generation_indices finds
them. "vars" went through JSON before rendering, so it is exactly what the renderer saw (1.0 is
a float, 1 an int; an object's keys keep their order). An error is {"type": the exception's
class name, "message"}, with "lineno" for a syntax error (TemplateSyntaxError and its subclass
TemplateAssertionError, raised when the template is compiled).
"""
import datetime
import json
import os
import re
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

# The moment strftime_now reports; the C++ test sets the same one.
FROZEN_CLOCK = datetime.datetime(2024, 7, 26, 10, 30, 0)


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag: renders its body unchanged and, while a list is
    attached, appends the body's (start, end) in the output. The start is the length of what the
    template has yielded so far, as transformers counts it (Template.generate's chunks), so a
    generation block inside a macro or a {% set %} block is placed where transformers places it."""

    tags = {"generation"}

    def __init__(self, environment):
        super().__init__(environment)
        self.blocks = None
        self.spans = None
        self.markers = False  # wrap bodies in MARK_OPEN/MARK_CLOSE instead (true_spans)

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        rv = caller()
        if self.markers:
            return MARK_OPEN + rv + MARK_CLOSE
        if self.spans is not None:
            start = len("".join(self.blocks))
            self.spans.append((start, start + len(rv)))
        return rv


# Private-use characters no case holds: where the bodies really are, whatever buffered them.
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return FROZEN_CLOCK.strftime(fmt)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def make_environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def tracker_of(env):
    return next(e for e in env.extensions.values() if isinstance(e, AssistantTracker))


def render_tracked(env, template, variables):
    """(output, spans): the template rendered chunk by chunk as transformers'
    _render_with_assistant_indices does."""
    compiled = env.from_string(template)
    tracker = tracker_of(env)
    tracker.blocks, tracker.spans = [], []
    try:
        for chunk in compiled.generate(**variables):
            tracker.blocks.append(chunk)
        return "".join(tracker.blocks), list(tracker.spans)
    finally:
        tracker.blocks = tracker.spans = None


def true_spans(env, template, variables):
    """Where each generation body really lies in the output, in the order the bodies open
    (markers around each body, then taken out)."""
    tracker = tracker_of(env)
    tracker.markers = True
    try:
        marked = env.from_string(template).render(**variables)
    finally:
        tracker.markers = False
    spans, opened, length = [], [], 0
    for ch in marked:
        if ch == MARK_OPEN:
            opened.append(len(spans))
            spans.append([length, None])
        elif ch == MARK_CLOSE:
            spans[opened.pop()][1] = length
        else:
            length += 1
    return spans


def error_record(e):
    record = {"type": type(e).__name__}
    record["message"] = e.message if isinstance(e, jinja2.TemplateError) else str(e)
    if isinstance(e, jinja2.TemplateSyntaxError):
        record["lineno"] = e.lineno
    return record


def utf8_offset(text, index):
    return len(text[:index].encode("utf-8"))


def run_case(env, name, template, variables):
    text = json.dumps(variables)
    fresh = lambda: json.loads(text)  # each render its own copy: list.pop is allowed
    case = {"name": name, "template": template, "vars": fresh()}
    try:
        output, spans = render_tracked(env, template, fresh())
        plain = env.from_string(template).render(**fresh())
        assert output == plain, (name, output, plain)
        # An object's repr holding its address would differ from run to run.
        assert not re.search(r" at 0x[0-9a-f]+", output), (name, output)
        case["output"] = output
        if re.search(r"{%[-+]?\s*generation", template):
            utf8 = lambda spans: [[utf8_offset(output, a), utf8_offset(output, b)] for a, b in spans]
            case["spans"] = [list(s) for s in spans]
            case["spans_utf8"] = utf8(spans)
            real = true_spans(env, template, fresh())
            if sorted(real) != sorted(case["spans"]):
                case["true_spans"] = real
                case["true_spans_utf8"] = utf8(real)
    except Exception as e:  # every failure is a reference too
        case["error"] = error_record(e)
    return case


MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Où est 日本?"},
    {"role": "assistant", "content": "東京 😀"},
]
USERS = [{"name": "Ann", "age": 31, "admin": True},
         {"name": "bob", "age": 25, "admin": False, "email": None},
         {"name": "Cy", "age": 31, "email": "cy@x"}]


def cases():
    """(name, template, vars) in the order they are written."""
    c = []

    def add(name, template, **variables):
        c.append((name, template, variables))

    # Text and whitespace control.
    add("text_plain", "Hello, world!")
    add("text_empty", "")
    add("text_non_ascii", "héllo 日本語 😀 שלום")
    add("ws_block_dash_left", "a  \n  {%- if true %}b{% endif %}")
    add("ws_block_dash_right", "{% if true -%}  \n  b{% endif %}")
    add("ws_expr_dash_both", "a  \n {{- 'x' -}} \n  b")
    add("ws_expr_dash_left_only", "a  {{- 'x' }}  b")
    add("ws_trim_blocks", "{% if true %}\nyes\n{% endif %}\nend")
    add("ws_trim_blocks_one_newline_only", "{% if true %}\n\nx{% endif %}")
    add("ws_trim_blocks_not_after_spaces", "{% if true %}  \nx{% endif %}")
    add("ws_trim_blocks_not_after_expr", "{{ 'a' }}\nb")
    add("ws_lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\nend")
    add("ws_lstrip_blocks_tabs", "\t \t{% if true %}x{% endif %}")
    add("ws_lstrip_blocks_not_expr", "  {{ 'x' }}\n")
    add("ws_lstrip_blocks_not_after_text", "a  {% if true %}b{% endif %}")
    add("ws_lstrip_blocks_plus", "  {%+ if true %}x{% endif %}")
    add("ws_trim_blocks_plus", "{% if true +%}\nx{% endif %}")
    add("ws_lstrip_dash_left_eats_newlines", "a\n\n  {%- if true %}b{% endif %}")
    add("ws_dash_right_eats_newlines", "{%- if true -%}\n\n  b  \n{%- endif -%}\n\nc")
    add("ws_indented_for", "<ul>\n  {% for i in [1, 2] %}\n    <li>{{ i }}</li>\n  {% endfor %}\n</ul>")
    add("ws_dash_everywhere", "{%- for i in [1, 2] -%}\n  {{- i -}}\n{%- endfor -%}")
    add("comment", "a {# note #} b")
    add("comment_dash", "a {#- note -#} b")
    add("comment_lstrip_trim", "a\n  {# note #}\nb")
    add("comment_multiline", "{# one\ntwo #}x")
    add("trailing_newline_dropped", "x\n")
    add("trailing_newlines_one_dropped", "x\n\n")
    add("trailing_newline_after_tag", "{% if true %}x{% endif %}\n")
    add("trailing_newline_after_expr", "{{ 'x' }}\n")
    add("crlf_text", "a\r\nb\r\n")
    add("crlf_trim_blocks", "{% if true %}\r\nx\r\n{% endif %}\r\ny")
    add("crlf_in_string_literal", "{{ 'a\r\nb' }}")
    add("cr_alone", "a\rb")
    add("raw_block", "{% raw %}{{ x }}{% if %}{% endraw %}")
    add("raw_block_dash", "a {%- raw -%}  {{ x }}  {%- endraw -%} b")
    add("raw_block_lstrip_trim", "  {% raw %}\n{{ x }}\n  {% endraw %}\nz")

    # Literals.
    add("str_escapes", r"""{{ "n\nt\tb\\s\'d\"x\x41u\u00e9U\U0001F600" }}""")
    add("str_escape_unknown", r"{{ 'a\qb\d' }}")
    add("str_escape_octal_and_bell", r"{{ '\101\x07'|length }}")
    add("str_single_quote_escaped", r"{{ 'it\'s' }}")
    add("str_non_ascii_literal", "{{ 'é日😀' }}")
    add("str_adjacent_literals", "{{ 'a' 'b' }}")
    add("int_literal", "{{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }}")
    add("float_literal", "{{ 1e3 }} {{ 0.1 }} {{ 1.5e-3 }} {{ 1_000.5 }} {{ 2.0 }} {{ 1E2 }}")
    add("bool_none_literals", "{{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }}")
    add("list_literal", "{{ [1, 'a', [2.5, none], true] }}")
    add("list_trailing_comma", "{{ [1, 2,] }}")
    add("tuple_literal", "{{ (1, 'a') }} {{ (1,) }} {{ () }}")
    add("dict_literal", "{{ {'a': 1, \"b\": [true], 'c': {'d': none}} }}")
    add("dict_literal_order_kept", "{{ {'z': 1, 'a': 2} }}")

    # Printing values.
    add("print_none_var", "{{ x }}", x=None)
    add("print_bools_var", "{{ t }} {{ f }}", t=True, f=False)
    add("print_undefined", "[{{ nope }}]")
    add("undefined_soft_uses", "[{{ nope|upper }}] [{{ nope ~ 'a' }}] {{ nope == none }} {{ 'a' in nope }} "
        "[{{ nope|join }}] {{ nope|list }} {{ not nope }} [{{ nope|string }}]")
    add("print_list_of_strings_repr", "{{ x }}", x=["a", "b'c", 'd"e', "x\ny", "t\tz", "back\\s"])
    add("print_str_both_quotes_repr", "{{ x }}", x=["it's \"q\""])
    add("print_non_ascii_repr", "{{ x }}", x=["é", "日本", "😀"])
    add("print_non_printable_repr", "{{ x }}", x=["\u200b", "\x00", "\x7f", "\u00a0"])
    add("print_nested_dict", "{{ x }}", x={"a": [1, {"b": None}], "c": True, "d": "q'"})
    add("print_empty_containers", "{{ [] }} {{ {} }} {{ x }} {{ y }}", x=[], y={})
    add("print_floats", "{{ x }}", x=[0.1, 1e-05, 1.0, 3.0e20, -0.0, 1e16, 1e15, 123.456, 2.5e-7,
                                       0.30000000000000004, 1.7976931348623157e308, 5e-324])
    add("print_float_scalars", "{{ a }} {{ b }} {{ c }} {{ d }} {{ e }}", a=0.1, b=1e-05, c=1.0,
        d=3.0e20, e=-0.0)
    add("print_float_arith", "{{ 0.1 + 0.2 }} {{ 10 / 3 }} {{ 1e15 * 10 }} {{ 1e100 }} {{ 2 ** 0.5 }}")
    add("print_large_ints", "{{ a }} {{ b }} {{ c }}", a=9007199254740993, b=-9223372036854775808,
        c=123456789012)
    add("print_bigint_arith", "{{ 2 ** 64 }} {{ 9223372036854775807 + 1 }}")
    add("print_undefined_in_list", "{{ [nope] }}")
    add("print_mixed_concat", "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ [1] }}")

    # Operators and precedence.
    add("op_arith_precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 10 - 2 - 3 }}")
    add("op_division", "{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7.5 // 2 }}")
    add("op_modulo", "{{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 % 2 }}")
    add("op_power", "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2.0 ** 2 }}")
    add("op_power_left_assoc", "{{ 2 ** 3 ** 2 }}")
    add("op_power_unary_minus", "{{ -2 ** 2 }}")
    add("op_unary_minus", "{{ -x }} {{ - -3 }} {{ +4 }}", x=5)
    add("op_concat_tilde", "{{ 'a' ~ 'b' ~ 3 }}")
    add("op_concat_above_plus", "{{ 1 + 2 ~ 3 }}")
    add("op_concat_below_mul", "{{ 'a' ~ 2 * 3 }}")
    add("op_str_plus_mul", "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'a' * -1 }}|")
    add("op_list_plus_mul", "{{ [1] + [2] }} {{ [0] * 3 }}")
    add("op_int_float_mix", "{{ 1 + 1.0 }} {{ 3 * 0.5 }} {{ true + 1 }}")
    add("op_compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' != 'b' }}")
    add("op_compare_chained", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 < 3 > 2 }} {{ 1 == 1 == 1 }}")
    add("op_compare_lists", "{{ [1, 2] == [1, 2] }} {{ [1, 2] < [1, 3] }} {{ {'a': 1} == {'a': 1} }}")
    add("op_eq_different_types", "{{ 1 == '1' }} {{ none == false }} {{ 0 == false }} {{ 1 == true }}")
    add("op_in_string", "{{ 'b' in 'abc' }} {{ 'x' not in 'abc' }} {{ '' in 'abc' }}")
    add("op_in_list_dict", "{{ 2 in [1, 2] }} {{ 'a' in {'a': 1} }} {{ 1 in {'a': 1} }} {{ 3 not in [1] }}")
    add("op_not_in_precedence", "{{ not 'x' in 'abc' }} {{ not 1 == 2 }}")
    add("op_or_returns_operand", "{{ '' or 'x' }} {{ 'a' or 'b' }} {{ none or 0 }} {{ [] or 'e' }}")
    add("op_and_returns_operand", "{{ 'a' and 'b' }} {{ 0 and 1 }} {{ '' and 'x' }}|")
    add("op_and_or_precedence", "{{ false or true and false }} {{ (false or true) and false }}")
    add("op_not", "{{ not '' }} {{ not 1 }} {{ not [] }} {{ not none }} {{ not not 'a' }}")
    add("op_conditional", "{{ 'y' if true else 'n' }} {{ 'y' if 0 else 'n' }}")
    add("op_conditional_no_else", "[{{ 'y' if false }}] [{{ 'y' if true }}]")
    add("op_conditional_no_else_is_undefined", "{{ ('y' if false) is defined }}")
    add("op_conditional_nested", "{{ 'a' if x == 1 else 'b' if x == 2 else 'c' }}", x=2)
    add("op_filter_before_minus", "{{ x|length - 1 }}", x=[1, 2, 3])
    add("op_filter_before_unary_minus", "{{ -x|abs }}", x=-3)
    add("op_filter_before_tilde", "{{ 'ab' ~ 'c'|upper }}")
    add("op_filter_on_parenthesised", "{{ ('ab' ~ 'c')|upper }}")
    add("op_not_is_defined", "{{ not x is defined }} {{ not x is none }}", x=None)
    add("err_str_plus_int", "{{ 'a' + 1 }}")
    add("err_int_plus_str", "{{ 1 + 'a' }}")
    add("err_list_plus_str", "{{ [1] + 'a' }}")
    add("err_none_plus_int", "{{ x + 1 }}", x=None)
    add("err_str_lt_int", "{{ 'a' < 1 }}")
    add("err_none_lt_int", "{{ x < 1 }}", x=None)
    add("err_div_zero", "{{ 1 / 0 }}")
    add("err_floordiv_zero", "{{ 1 // 0 }}")
    add("err_mod_zero", "{{ 5 % 0 }}")
    add("err_undefined_plus", "{{ nope + 1 }}")

    # Subscripts, slices, attributes.
    add("sub_index", "{{ x[0] }} {{ x[-1] }} {{ x[1] }}", x=["a", "b", "c"])
    add("sub_index_out_of_range", "[{{ x[10] }}] {{ x[10] is defined }} {{ x[-10] is defined }}", x=[1])
    add("sub_slices", "{{ x[1:] }} {{ x[:-1] }} {{ x[::-1] }} {{ x[::2] }} {{ x[1:2] }} {{ x[5:] }}",
        x=[1, 2, 3, 4])
    add("sub_slice_string_non_ascii", "{{ s[1:3] }}|{{ s[::-1] }}|{{ s[0] }}|{{ s[-1] }}", s="héllo日😀")
    add("sub_slice_step_zero", "{{ x[::0] }}", x=[1])
    add("sub_dot_integer", "{{ x.0 }} {{ x.1.a }}", x=["p", {"a": "q"}])
    add("sub_dict_key", "{{ d['k'] }} {{ d.k }} {{ d[\"k\"] }}", d={"k": "v"})
    add("sub_dict_missing_key", "[{{ d['nope'] }}] [{{ d.nope }}]", d={"k": "v"})
    add("sub_message_content", "{{ message.role }}: {{ message['content'] }}",
        message={"role": "user", "content": "hi"})
    add("sub_attr_method_vs_key", "{{ d['items'] }} {{ d.items is callable }} {{ d.items() | list }}",
        d={"items": "key!"})
    add("sub_dict_literal_attr", "{{ {'a': 1}.a }}")
    add("sub_var_key", "{{ d[k] }}", d={"a": 1, "b": 2}, k="b")
    add("sub_int_key_on_dict", "[{{ d[0] }}]", d={"0": "s"})
    add("sub_nested", "{{ messages[1]['content'] }} {{ messages[-1].content }}", messages=MESSAGES)
    add("err_attr_of_undefined", "{{ nope.role }}")
    add("err_item_of_undefined", "{{ nope['role'] }}")
    add("err_attr_of_missing_attr", "{{ m.nope.role }}", m={"role": "user"})
    add("err_attr_of_missing_index", "{{ x[3].role }}", x=[1])
    add("attr_of_none_is_undefined", "[{{ x.role }}]", x=None)
    add("undefined_attr_printed", "[{{ m.nope }}] [{{ x.real }}]", m={}, x=None)

    # String methods.
    add("strm_strip", "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}]", s=" \n\t a b \n ")
    add("strm_strip_chars", "{{ 'xxaxyx'.strip('x') }} {{ 'xxa'.lstrip('x') }} {{ 'axx'.rstrip('xa') }}")
    add("strm_strip_unicode_space", "[{{ s.strip() }}]", s="\u00a0\u3000x\u2003")
    add("strm_split", "{{ 'a b  c\n d'.split() }} {{ 'a,b,,c'.split(',') }} {{ ''.split(',') }}")
    add("strm_split_maxsplit", "{{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.split(none, 1) }}")
    add("strm_split_multichar", "{{ 'a</think>b</think>c'.split('</think>') }}")
    add("strm_rsplit", "{{ 'a,b,c'.rsplit(',', 1) }} {{ 'a b c'.rsplit() }}")
    add("strm_starts_ends", "{{ s.startswith('ab') }} {{ s.endswith('yz') }} {{ s.startswith(('x', 'a')) }} "
        "{{ s.endswith(('q',)) }}", s="abcxyz")
    add("strm_startswith_start", "{{ 'abc'.startswith('b', 1) }}")
    add("err_startswith_list", "{{ 'abc'.startswith(['a']) }}")
    add("strm_replace", "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }}")
    add("strm_case", "{{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ s.capitalize() }} {{ s.swapcase() }}",
        s="hELLo wORLD's x1y")
    add("strm_case_non_ascii", "{{ s.upper() }} {{ s.lower() }} {{ s.title() }}", s="éa straße ǅ")
    add("strm_find_count", "{{ 'abcabc'.find('c') }} {{ 'abc'.find('z') }} {{ 'abcabc'.rfind('c') }} "
        "{{ 'abcabc'.count('bc') }} {{ 'abcabc'.index('b') }}")
    add("strm_find_non_ascii", "{{ s.find('日') }}", s="é日")
    add("strm_join", "{{ ', '.join(['a', 'b']) }} {{ ''.join('xyz') }}")
    add("err_strm_join_ints", "{{ ', '.join([1, 2]) }}")
    add("strm_splitlines", "{{ 'a\nb\r\nc\n'.splitlines() }} {{ 'a\nb'.splitlines(true) }}")
    add("strm_predicates", "{{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'AB'.isupper() }} "
        "{{ 'ab'.islower() }} {{ 'a1'.isalnum() }} {{ ''.isdigit() }} {{ 'Ab Cd'.istitle() }}")
    add("strm_format", "{{ '{} and {}'.format(1, 'b') }} {{ '{name}!'.format(name='x') }} {{ '{0:>4}'.format(7) }}")
    add("strm_format_unsafe", "{{ '{0.__class__}'.format(1) }}")
    add("strm_percent", "{{ '%s=%d' % ('a', 3) }} {{ '%.2f' % 3.14159 }}")
    add("strm_misc", "{{ 'ab'.center(6, '*') }} {{ '7'.zfill(3) }} {{ 'ab'.ljust(4) }}| {{ 'a-b'.partition('-') }}")
    add("strm_removeprefix", "{{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.json'.removesuffix('.json') }}")
    add("strm_on_undefined_call", "{{ nope.strip() }}")

    # Dict and list methods.
    add("dictm_items_keys_values", "{{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }}",
        d={"b": 1, "a": 2})
    add("dictm_views_printed", "{{ d.keys() }} {{ d.values() }} {{ d.items() }}", d={"b": 1, "a": 2})
    add("dictm_get", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }}", d={"a": 1})
    add("listm_index_count", "{{ x.index(2) }} {{ x.count(1) }}", x=[1, 2, 1])
    add("err_listm_index_missing", "{{ x.index(5) }}", x=[1])
    add("sandbox_list_append", "{{ x.append(1) }}", x=[1])
    add("sandbox_list_append_printed", "[{{ x.append }}]", x=[1])
    add("sandbox_list_pop_allowed", "{{ x.pop() }} {{ x }}", x=[1, 2])
    add("sandbox_dict_update", "{{ d.update({'a': 2}) }}", d={"a": 1})
    add("sandbox_dict_setdefault", "{{ d.setdefault('a', 2) }}", d={})
    add("sandbox_dunder_class", "[{{ x.__class__ }}]", x=[1])
    add("sandbox_dunder_chain", "[{{ x.__class__.__name__ }}]", x=[1])
    add("sandbox_dunder_item", "[{{ x['__class__'] }}]", x={})
    add("sandbox_private_attr", "[{{ 'a'._x }}]")
    add("sandbox_set_attr_on_dict", "{% set d.a = 2 %}{{ d }}", d={"a": 1})

    # if / for.
    add("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %}")
    add("if_truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}")
    add("if_undefined_false", "{% if nope %}y{% else %}n{% endif %}")
    add("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
        "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}")
    add("for_previtem_nextitem", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}")
    add("for_previtem_defined", "{% for x in [1, 2] %}{{ loop.previtem is defined }}{% endfor %}")
    add("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}")
    add("for_changed", "{% for x in [1, 1, 2, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}")
    add("for_else_empty", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}")
    add("for_else_not_taken", "{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}")
    add("for_if_filter_loop_index", "{% for x in range(10) if x is odd %}{{ loop.index }}:{{ x }}/{{ loop.length }}"
        "{{ '!' if loop.last }} {% endfor %}")
    add("for_if_filter_messages", "{% for m in messages if m.role != 'system' %}{{ loop.index0 }}{{ m.role[0] }}"
        "{% endfor %}", messages=MESSAGES)
    add("for_nested_outer_loop", "{% for a in 'ab' %}{% set outer = loop %}{% for b in 'xy' %}"
        "{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %}")
    add("for_nested_loop_shadows", "{% for a in 'ab' %}{% for b in 'x' %}{{ loop.index0 }}{% endfor %}"
        "{{ loop.index0 }}{% endfor %}")
    add("for_unpack_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"b": 1, "a": 2})
    add("for_unpack_pairs", "{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}")
    add("for_unpack_parens", "{% for (a, b) in [[1, 2]] %}{{ a }}{{ b }}{% endfor %}")
    add("err_for_unpack_mismatch", "{% for a, b in [[1, 2, 3]] %}{% endfor %}")
    add("for_over_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", d={"z": 1, "a": 2})
    add("for_over_string_non_ascii", "{% for ch in s %}[{{ ch }}]{% endfor %}", s="é😀")
    add("for_over_undefined", "[{% for x in nope %}{{ x }}{% endfor %}]")
    add("err_for_over_none", "{% for x in n %}{% endfor %}", n=None)
    add("err_for_over_int", "{% for x in 3 %}{% endfor %}")
    add("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
        "{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}")
    add("for_break_loop_last", "{% for x in [1, 2, 3] %}{{ loop.last }}{% break %}{% endfor %}")
    add("for_loop_outside", "{{ loop.index }}")
    add("for_loop_variable_after", "{% for x in [1, 2] %}{% endfor %}[{{ x }}]")
    add("for_reversed_messages", "{% for m in messages[::-1] %}{{ loop.index0 }}{{ m.role[0] }}{% endfor %}",
        messages=MESSAGES)
    add("for_recursive", "{% for x in tree recursive %}{{ x.n }}{% if x.c %}({{ loop(x.c) }}){% endif %}"
        "{% endfor %}", tree=[{"n": 1, "c": [{"n": 2}, {"n": 3, "c": [{"n": 4}]}]}])
    add("for_loop_depth", "{% for x in tree recursive %}{{ loop.depth }}{% if x.c %}{{ loop(x.c) }}{% endif %}"
        "{% endfor %}", tree=[{"c": [{"c": []}]}])

    # set, scoping, namespace.
    add("set_simple", "{% set a = 1 %}{% set b = a + 1 %}{{ a }}{{ b }}")
    add("set_tuple_unpack", "{% set a, b = 1, 2 %}{{ a }}{{ b }}")
    add("set_tuple_from_list", "{% set a, b = ['x', 'y'] %}{{ b }}{{ a }}")
    add("set_tuple_value", "{% set t = 1, 2 %}{{ t }}")
    add("set_block", "{% set x %}  a\n  {{ 1 + 1 }} {% endset %}[{{ x }}]")
    add("set_block_filter", "{% set x | upper | trim %} ab {% endset %}[{{ x }}]")
    add("set_block_lstrip_trim", "{% set x %}\n  {% if true %}\nin\n  {% endif %}\n{% endset %}[{{ x }}]")
    add("set_shadows_var", "{% set x = x + 1 %}{{ x }}", x=1)
    add("set_in_for_does_not_leak", "{% set c = 0 %}{% for i in [1, 2] %}{% set c = c + i %}{{ c }},"
        "{% endfor %}{{ c }}")
    add("set_in_if_leaks", "{% if true %}{% set y = 1 %}{% endif %}{{ y }}")
    add("set_in_for_new_name", "{% for i in [1] %}{% set z = 5 %}{% endfor %}[{{ z }}]")
    add("namespace_assign", "{% set ns = namespace(c=0, s='') %}{% for i in [1, 2, 3] %}{% set ns.c = ns.c + i %}"
        "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}")
    add("namespace_new_attr", "{% set ns = namespace() %}{% set ns.x = 'a' %}{{ ns.x }} [{{ ns.y }}]")
    add("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}")
    add("namespace_printed", "{% set ns = namespace(a=1) %}{{ ns }}")
    add("namespace_item_lookup", "{% set ns = namespace(a=1) %}{{ ns['a'] }}")
    add("err_set_attr_non_namespace", "{% set x = {} %}{% set x.a = 1 %}")
    add("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]")
    add("filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}")
    add("filter_block_chain", "{% filter trim|upper %}  x  {% endfilter %}")

    # Macros.
    add("macro_defaults", "{% macro m(a, b='d') %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 2) }} {{ m(1, b=3) }}")
    add("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}")
    add("macro_varargs", "{% macro m(a) %}{{ a }}{{ varargs }}{% endmacro %}{{ m(1, 2, 3) }}")
    add("macro_kwargs", "{% macro m() %}{{ kwargs }}{% endmacro %}{{ m(x=1, y='s') }}")
    add("err_macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}")
    add("err_macro_unknown_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}")
    add("macro_caller", "{% macro w(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}"
        "{% call w('b') %}in{% endcall %}")
    add("macro_whitespace", "{% macro m(x) %}\n  {{ x }}\n{% endmacro %}[{{ m(1) }}]")
    add("macro_recursive", "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}")
    add("macro_sees_globals", "{% macro m() %}{{ g }}{% endmacro %}{{ m() }}", g="G")
    add("macro_returns_string", "{% macro m() %}ab{% endmacro %}{{ m()|length }} {{ m() is string }}")

    # Filters.
    add("f_trim", "[{{ s|trim }}] [{{ 'xxaxx'|trim('x') }}]", s="\n  a b \t\n")
    add("f_trim_none", "{{ x|trim }}", x=None)
    add("f_length", "{{ 'abc'|length }} {{ 'é日😀'|length }} {{ [1, 2]|length }} {{ {'a': 1}|count }} {{ nope|length }}")
    add("err_f_length_none", "{{ x|length }}", x=None)
    add("f_tojson_default", "{{ x|tojson }}", x={"a": [1, 2.5, None, True], "s": "é\"\n</b>'&", "e": {}})
    add("f_tojson_indent2", "{{ x|tojson(indent=2) }}", x={"a": [1, {"b": None}], "c": []})
    add("f_tojson_indent4", "{{ x|tojson(indent=4) }}", x=[{"name": "f", "parameters": {"type": "object"}}])
    add("f_tojson_separators", "{{ x|tojson(separators=(',', ':')) }}", x={"a": [1, 2]})
    add("f_tojson_sort_keys", "{{ x|tojson(sort_keys=true) }}", x={"b": 1, "a": {"d": 1, "c": 2}})
    add("f_tojson_ensure_ascii", "{{ x|tojson(ensure_ascii=true) }}", x="é日😀")
    add("f_tojson_positional_is_ensure_ascii", "{{ x|tojson(2) }}", x={"k": "é"})
    add("f_tojson_scalars", "{{ 1|tojson }} {{ 1.0|tojson }} {{ 1e20|tojson }} {{ 0.1|tojson }} {{ none|tojson }} "
        "{{ true|tojson }} {{ 'x'|tojson }} {{ (1, 2)|tojson }} {{ -0.0|tojson }}")
    add("f_tojson_non_ascii_control", "{{ s|tojson }}", s="a\u0001\u007f\u2028é\t")
    add("f_tojson_template_dict_order", "{{ {'z': 1, 'a': none}|tojson }}")
    add("err_f_tojson_undefined", "{{ nope|tojson }}")
    add("f_string", "{{ 1|string }} {{ [1, 'a']|string }} {{ none|string }} {{ (1|string) is string }}")
    add("f_list", "{{ 'abc'|list }} {{ d|list }} {{ (1, 2)|list }}", d={"k": 1, "j": 2})
    add("f_join", "{{ [1, 2, 3]|join(', ') }} {{ 'abc'|join('-') }} {{ ['a', 'b']|join }}")
    add("f_join_attribute", "{{ users|join(', ', attribute='name') }}", users=USERS)
    add("f_case", "{{ 'aB'|lower }} {{ 'aB'|upper }} {{ 'hello wORLD'|title }} {{ 'hELLO'|capitalize }}")
    add("f_title_punctuation", "{{ \"it's a-b c_d\"|title }}")
    add("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 1) }}")
    add("f_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}]")
    add("f_last_messages", "{{ (messages|last).role }}", messages=MESSAGES)
    add("f_default", "{{ nope|default('d') }} [{{ ''|default('d') }}] {{ ''|default('d', true) }} "
        "{{ x|default('d') }} {{ x|d('d', boolean=true) }} {{ nope|d }}", x=None)
    add("f_default_attr", "{{ m.name|default('anon') }}", m={"role": "user"})
    add("f_selectattr_equalto", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}",
        messages=MESSAGES)
    add("f_selectattr_truthy", "{{ users|selectattr('admin')|map(attribute='name')|list }}", users=USERS)
    add("f_selectattr_defined", "{{ users|selectattr('email', 'defined')|map(attribute='name')|list }}", users=USERS)
    add("f_selectattr_undefined", "{{ users|selectattr('email', 'undefined')|map(attribute='name')|list }}",
        users=USERS)
    add("f_selectattr_none", "{{ users|selectattr('email', 'none')|map(attribute='name')|list }}", users=USERS)
    add("f_selectattr_string", "{{ users|selectattr('email', 'string')|map(attribute='name')|list }}", users=USERS)
    add("f_selectattr_gt", "{{ users|selectattr('age', '>', 30)|map(attribute='name')|list }}", users=USERS)
    add("f_rejectattr", "{{ users|rejectattr('admin')|map(attribute='name')|list }} "
        "{{ users|rejectattr('age', 'eq', 31)|map(attribute='name')|list }}", users=USERS)
    add("f_selectattr_chain_length", "{{ messages|rejectattr('role', 'equalto', 'system')|list|length }}",
        messages=MESSAGES)
    add("f_selectattr_printed_needs_list", "{{ (messages|selectattr('role', 'equalto', 'x')|list) == [] }}",
        messages=MESSAGES)
    add("f_select_reject", "{{ [0, 1, 2, '', 'a']|select|list }} {{ range(6)|select('odd')|list }} "
        "{{ [1, none, 2]|reject('none')|list }} {{ [1, 2, 3]|select('equalto', 2)|list }} "
        "{{ [1, 2, 3]|reject('>', 1)|list }}")
    add("f_map", "{{ users|map(attribute='name')|list }} {{ ['a', 'b']|map('upper')|list }} "
        "{{ ['1', '2']|map('int')|sum }}", users=USERS)
    add("f_map_default", "{{ users|map(attribute='email', default='-')|list }}", users=USERS)
    add("f_map_filter_args", "{{ ['a,b', 'c']|map('replace', ',', ';')|list }}")
    add("f_items", "{{ d|items|list }} {% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", d={"b": 1, "a": 2})
    add("f_int", "{{ '42'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ '3.7'|int }} {{ 3.7|int }} {{ -3.7|int }} "
        "{{ ' 7 '|int }} {{ '0x1A'|int(base=16) }} {{ none|int }} {{ true|int }}")
    add("f_float", "{{ '1.5'|float }} {{ 'x'|float }} {{ 1|float }} {{ '1e3'|float }} {{ 'x'|float(2.5) }}")
    add("f_abs", "{{ -3|abs }} {{ (-3)|abs }} {{ -2.5|abs }}")
    add("f_round", "{{ 3.14159|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 42|round }} "
        "{{ 2.71|round(1, 'floor') }} {{ 2.11|round(1, 'ceil') }} {{ 1.005|round(2) }} {{ 2.675|round(2) }}")
    add("f_round_int_method", "{{ 2.5|round|int }} {{ 7|round(0, 'floor') }}")
    add("f_sort", "{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'a', 'C']|sort }} "
        "{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}")
    add("f_sort_attribute", "{{ users|sort(attribute='age')|map(attribute='name')|list }} "
        "{{ users|sort(attribute='name')|map(attribute='name')|list }}", users=USERS)
    add("f_unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ [1, 2, 1]|unique|list }}")
    add("f_reverse", "{{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ 'é日'|reverse }}")
    add("f_indent", "[{{ 'a\nb\n\nc'|indent }}] [{{ 'a\nb'|indent(2, true) }}] [{{ 'a\n\nb'|indent(2, blank=true) }}] "
        "[{{ 'a\nb'|indent('> ') }}]")
    add("f_safe_escape", "{{ '<b>'|safe }} {{ '<a href=\"x\">&\\'</a>'|e }} {{ '<'|escape }}")
    add("f_escape_concat", "{{ ('<'|e) ~ '<' }} {{ ('<'|e) + '<' }}")
    add("f_wordcount", "{{ 'a bb  c\nd'|wordcount }}")
    add("f_center", "[{{ 'ab'|center(6) }}] [{{ 'abc'|center(6) }}]")
    add("f_truncate", "{{ 'hello world foo bar'|truncate(9) }}|{{ 'hello world'|truncate(9) }}|"
        "{{ 'hello world foo bar'|truncate(9, true) }}|{{ 'hello world foo'|truncate(9, false, '~', 0) }}")
    add("f_batch_slice", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }} "
        "{{ [1, 2, 3, 4, 5]|slice(2)|list }}")
    add("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }} "
        "{{ d|dictsort(true) }}", d={"b": 2, "A": 3, "a": 1})
    add("f_sum_min_max", "{{ [1, 2, 3]|sum }} {{ [1, 2]|sum(start=10) }} {{ users|sum(attribute='age') }} "
        "{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|min }} [{{ []|max }}]", users=USERS)
    add("f_min_max_attribute", "{{ (users|max(attribute='age')).name }} {{ (users|min(attribute='age')).name }}",
        users=USERS)
    add("f_attr", "[{{ d|attr('name') }}] {{ 'ab'|attr('upper') is callable }}", d={"name": "x"})
    add("f_format", "{{ '%s=%d'|format('a', 1) }} {{ '%(a)s-%(b)s'|format(a=1, b=2) }} {{ '%5.1f'|format(3.14159) }}")
    add("f_striptags", "[{{ '<b>x</b>   <br/>y\n z'|striptags }}]")
    add("f_pprint", "{{ {'a': [1, 'b']}|pprint }}")
    add("f_urlencode", "{{ 'a b&c/é'|urlencode }}")
    add("f_filesizeformat", "{{ 1500|filesizeformat }} {{ 1500|filesizeformat(true) }}")
    add("f_wordwrap", "{{ 'aaa bbb ccc ddd'|wordwrap(7) }}")
    add("g_dict", "{{ dict(a=1, b='x') }} {{ dict() }}")
    add("g_range", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(3, 0, -1)|list }} {{ range(3) }}")
    add("err_g_range_too_big", "{{ range(1000000)|length }}")
    add("g_unknown_function", "{{ nope() }}")

    # Tests.
    add("t_defined", "{{ x is defined }} {{ nope is defined }} {{ nope is undefined }} {{ x is undefined }}", x=None)
    add("t_none", "{{ x is none }} {{ none is none }} {{ 0 is none }} {{ nope is none }}", x=None)
    add("t_string", "{{ 'a' is string }} {{ 1 is string }} {{ x is string }}", x=None)
    add("t_number", "{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ '1' is number }}")
    add("t_integer_float", "{{ 1 is integer }} {{ 1.0 is integer }} {{ true is integer }} {{ 1.0 is float }} "
        "{{ 1 is float }} {{ x is float }}", x=2.0)
    add("t_mapping", "{% set ns = namespace() %}{{ d is mapping }} {{ [] is mapping }} {{ ns is mapping }}", d={})
    add("t_iterable_sequence", "{{ 'a' is iterable }} {{ [] is iterable }} {{ d is iterable }} {{ 1 is iterable }} "
        "{{ 'a' is sequence }} {{ d is sequence }} {{ 1 is sequence }} {{ nope is iterable }}", d={})
    add("t_boolean_true_false", "{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} "
        "{{ false is false }} {{ 0 is false }}")
    add("t_callable", "{{ 'a'.upper is callable }} {{ 'a' is callable }} {{ raise_exception is callable }}")
    add("t_equalto_eq", "{{ 1 is equalto 1 }} {{ 1 is eq 2 }} {{ 'a' is sameas 'a' }} {{ 1 is ne 2 }}")
    add("t_comparisons", "{{ 1 is lt 2 }} {{ 1 is gt 2 }} {{ 2 is le 2 }} {{ 2 is ge 3 }} "
        "{{ 2 is lessthan 3 }} {{ 2 is greaterthan 3 }}")
    add("t_operator_names_in_select", "{{ [1, 2, 3]|select('==', 2)|list }} {{ [1, 2, 3]|select('!=', 2)|list }} "
        "{{ [1, 2, 3]|select('<=', 2)|list }} {{ [1, 2, 3]|select('>=', 2)|list }} {{ [1, 2, 3]|select('<', 2)|list }}")
    add("syntax_is_operator", "{{ 1 is == 1 }}")
    add("t_in", "{{ 'a' is in 'abc' }} {{ 1 is in [2] }}")
    add("t_odd_even_divisibleby", "{{ 3 is odd }} {{ 3 is even }} {{ 0 is even }} {{ 9 is divisibleby 3 }} "
        "{{ 9 is divisibleby(2) }}")
    add("t_sameas", "{{ none is sameas none }} {{ true is sameas true }} {{ x is sameas x }} {{ [] is sameas [] }}",
        x=[1])
    add("t_lower_upper", "{{ 'ab' is lower }} {{ 'aB' is lower }} {{ 'AB' is upper }} {{ 'A1' is upper }}")
    add("t_is_not", "{{ x is not none }} {{ x is not string }} {{ nope is not defined }}", x="s")
    add("t_arg_without_parens", "{{ 'x' is equalto 'x' and true }}")
    add("t_filter_test", "{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }}")

    # raise_exception and strftime_now.
    add("raise_exception", "a{{ raise_exception('Conversation roles must alternate') }}b")
    add("raise_exception_in_if", "{% if messages[0].role != 'user' %}{{ raise_exception('first must be user, got '"
        " + messages[0].role) }}{% endif %}", messages=MESSAGES)
    add("raise_exception_not_reached", "{% if false %}{{ raise_exception('no') }}{% endif %}ok")
    add("strftime_now", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|"
        "{{ strftime_now('%B %d, %Y') }}|{{ strftime_now('%A %a %j %I%p %y') }}")
    add("strftime_now_llama_style", "{% if not date_string is defined %}{% set date_string = strftime_now('%d %b %Y') %}"
        "{% endif %}Today Date: {{ date_string }}")

    # {% generation %}.
    gen_loop = ("{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}"
                "{{ m.content }}</s>{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}")
    add("generation_in_loop", gen_loop, messages=MESSAGES)
    add("generation_none", gen_loop, messages=MESSAGES[:2])
    add("generation_two_blocks", "a{% generation %}bé{% endgeneration %}c{% generation %}日d{% endgeneration %}e")
    add("generation_empty_body", "x{% generation %}{% endgeneration %}y")
    add("generation_whitespace_control", "a  \n  {%- generation -%}  \n b \n  {%- endgeneration -%}  \n c")
    add("generation_trim_lstrip", "a\n  {% generation %}\n  b\n  {% endgeneration %}\nc")
    add("generation_in_if", "{% if x %}{% generation %}{{ x }}{% endgeneration %}{% endif %}!", x="😀y")
    add("generation_nested_in_for_and_if", "{% for i in range(3) %}{% if i is odd %}[{% generation %}{{ i }}"
        "{% endgeneration %}]{% else %}{{ i }}{% endif %}{% endfor %}")
    add("generation_in_macro", "{% macro m(x) %}<{% generation %}{{ x }}{% endgeneration %}>{% endmacro %}"
        "ab{{ m('c') }}{{ m('d') }}")
    add("generation_in_set_block", "xy{% set s %}p{% generation %}q{% endgeneration %}{% endset %}{{ s }}z")
    add("generation_in_filter_block", "xy{% filter upper %}p{% generation %}q{% endgeneration %}{% endfilter %}")
    add("generation_unclosed", "{% generation %}x")

    # Syntax errors and what the sandbox refuses.
    add("syntax_unclosed_if", "line1\n{% if true %}\nx")
    add("syntax_unclosed_for", "{% for x in y %}\n{{ x }}")
    add("syntax_unclosed_expr", "a\n{{ x ")
    add("syntax_unclosed_block_tag", "a\n\n{% if true ")
    add("syntax_unclosed_comment", "{# x")
    add("syntax_unclosed_string", "{{ 'abc }}")
    add("syntax_unknown_tag", "a\n{% foo %}")
    add("syntax_endfor_without_for", "x\n{% endfor %}")
    add("syntax_endif_mismatch", "{% for x in y %}{% endif %}")
    add("syntax_else_twice", "{% if true %}{% else %}{% else %}{% endif %}")
    add("syntax_unknown_filter", "a\n\n{{ x|nope }}")
    add("syntax_unknown_test", "{{ x is nope }}")
    add("syntax_unknown_filter_in_untaken_branch", "{% if false %}{{ x|nope }}{% endif %}")
    add("syntax_include", "{% include 'other.jinja' %}")
    add("syntax_extends", "{% extends 'base.jinja' %}")
    add("syntax_import", "{% import 'macros.jinja' as m %}")
    add("syntax_from_import", "{% from 'm.jinja' import x %}")
    add("syntax_bad_expression", "{{ 1 + }}")
    add("syntax_bad_operator", "{{ 1 === 1 }}")
    add("syntax_empty_expression", "{{ }}")
    add("syntax_assign_to_literal", "{% set 1 = 2 %}")
    add("syntax_do_tag_not_enabled", "{% do x.append(1) %}")
    add("syntax_python_style_call", "{{ len(x) }}", x=[1])
    add("syntax_lineno_multiline_tag", "a\nb\n{{ 1 +\n\n }}")
    add("syntax_block_tag", "{% block b %}x{% endblock %}")
    add("syntax_autoescape_tag", "{% autoescape true %}{{ '<' }}{% endautoescape %}")
    return c


def main():
    env = make_environment()
    names = set()
    out = []
    for name, template, variables in cases():
        assert name not in names, name
        names.add(name)
        out.append(run_case(env, name, template, variables))
    header = {
        "about": "Renderings by Python's jinja2 (tests/text/jinja_cases.py) in transformers' chat-template "
                 "environment: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), "
                 "loopcontrols, the {% generation %} tag, tojson = json.dumps(ensure_ascii=False, indent, "
                 "separators, sort_keys), raise_exception (TemplateError), strftime_now.",
        "jinja2": jinja2.__version__,
        "python": "%d.%d" % sys.version_info[:2],
        "clock": FROZEN_CLOCK.isoformat(),
        "clock_note": "strftime_now formats this fixed local time (C locale), not the time of the run",
        "spans": "spans: [start, end) Python str indices (code points) of each {% generation %} body in the "
                 "output, in the order they closed, as transformers' render_with_generation_indices finds them "
                 "(start = length of what Template.generate had yielded before the block ended, so a block "
                 "inside a macro, set block or filter block is misplaced as transformers misplaces it); "
                 "spans_utf8: the same as byte offsets into the output's UTF-8; true_spans, "
                 "true_spans_utf8 (only where they differ from spans): where the bodies really are, in the "
                 "order they open",
        "vars": "passed through JSON before rendering: int vs float as written (1 vs 1.0), object key order kept",
        "errors": "error.type is the Python exception's class name; error.lineno is given for "
                  "TemplateSyntaxError and TemplateAssertionError (raised while compiling)",
    }
    doc = {"header": header, "cases": out}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jinja_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in case for case in out)
    print(f"{path}: {len(out)} cases, {errors} errors")


if __name__ == "__main__":
    main()
