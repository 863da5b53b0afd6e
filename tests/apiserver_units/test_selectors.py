"""Label and field selectors, with cases modelled on upstream apimachinery behaviour."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.sandbox.apiserver.selectors import (
    LabelRequirement,
    LabelSelector,
    SelectorError,
    escape_field_value,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
    validate_label_key,
    validate_label_value,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x=a"),
        ("z=1,a=2", "a=2,z=1"),
        ("env in (prod, dev)", "env in (dev,prod)"),
        ("env notin (a),tier", "env notin (a),tier"),
        ("  a  ,  !b ", "a,!b"),
        ("example.com/team=ml", "example.com/team=ml"),
        ("x in ()", "x in ()"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("in in (in,notin)", "in in (in,notin)"),
    ],
)
def test_good_label_selectors_restring_canonically(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


@pytest.mark.parametrize(
    "text",
    [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        "x in (a",
        "x in a",
        "x,",
        ",x",
        "x=a b",
        "=a",
        "x=a/b",
        "-x=a",
        "a/b/c=d",
        "/x=a",
        "UPPER.example.com/x=a",
        "x=" + "a" * 64,
        "x notin",
    ],
)
def test_bad_label_selectors_raise(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x>1", {"x": "abc"}, False),
        ("x>1", {"x": "1_000"}, False),
        ("x>1", {}, False),
        ("x<1", {"x": "2"}, False),
        ("x!=y", {}, True),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "a"}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {}, False),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_label_selector_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_in_list_commas_belong_to_the_value_list() -> None:
    sel = parse_label_selector("a in (x,y),b=c")
    assert [str(r) for r in sel.requirements] == ["a in (x,y)", "b=c"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!,a", "unable to parse requirement: found ',', expected: identifier"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("(a", "found '(', expected: !, identifier, or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a ( b", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a>b", "values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be"),
        ("a=!", "unable to parse requirement: found '!', expected: identifier"),
    ],
)
def test_parse_error_messages_follow_upstream(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=re.escape(message)):
        parse_label_selector(text)


def test_label_key_errors_use_upstream_wording() -> None:
    assert validate_label_key("a/b/c")[0].startswith("a valid label key must consist of")
    assert validate_label_key("/x") == ["prefix part must be non-empty"]
    assert validate_label_key("x" * 64) == ["name part must be no more than 63 bytes"]
    assert validate_label_key("example.com/ok") == []
    assert validate_label_value("") == []
    assert validate_label_value("-bad")[0].startswith("a valid label must be an empty string")


def test_invalid_value_message_names_the_key() -> None:
    with pytest.raises(SelectorError, match=r'values\[0\]\[x\]: Invalid value: "a b"'):
        LabelRequirement("x", "=", ("a b",))


def test_label_selector_object_match_labels_and_expressions() -> None:
    sel = label_selector_from_object(
        {
            "matchLabels": {"team": "ml"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
                {"key": "spot", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
            ],
        }
    )
    assert sel.matches({"team": "ml", "tier": "gold", "zone": "a"})
    assert not sel.matches({"team": "ml", "tier": "gold", "zone": "a", "spot": "1"})
    assert not sel.matches({"team": "ml", "tier": "bronze", "zone": "a"})
    assert not sel.matches({"team": "ml", "tier": "gold", "zone": "a", "env": "dev"})
    assert str(sel) == "env notin (dev),!spot,team=ml,tier in (gold,silver),zone"


def test_empty_label_selector_object_selects_everything_and_none_selects_nothing() -> None:
    assert label_selector_from_object({}).matches({"a": "b"})
    assert label_selector_from_object({}).empty()
    assert not label_selector_from_object(None).matches({})
    assert not label_selector_from_object(None).empty()


@pytest.mark.parametrize(
    "obj",
    [
        {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": {"a": 1}},
        {"matchLabels": {"bad key": "x"}},
    ],
)
def test_invalid_label_selector_objects_raise(obj: dict[str, object]) -> None:
    with pytest.raises(SelectorError):
        label_selector_from_object(obj)


def test_invalid_operator_message_matches_upstream() -> None:
    with pytest.raises(SelectorError, match='"Equals" is not a valid label selector operator'):
        label_selector_from_object(
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}
        )


_label_part = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?", fullmatch=True)
_requirements = st.one_of(
    st.builds(lambda k, v: LabelRequirement(k, "=", (v,)), _label_part, _label_part),
    st.builds(lambda k, v: LabelRequirement(k, "!=", (v,)), _label_part, _label_part),
    st.builds(
        lambda k, vs: LabelRequirement(k, "in", tuple(vs)),
        _label_part,
        st.lists(_label_part, min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, vs: LabelRequirement(k, "notin", tuple(vs)),
        _label_part,
        st.lists(_label_part, min_size=1, max_size=3),
    ),
    st.builds(lambda k: LabelRequirement(k, "exists"), _label_part),
    st.builds(lambda k: LabelRequirement(k, "!"), _label_part),
    st.builds(lambda k, n: LabelRequirement(k, "gt", (str(n),)), _label_part, st.integers(0, 99)),
)


@given(st.lists(_requirements, max_size=5))
def test_label_selector_print_parse_round_trip(reqs: list[LabelRequirement]) -> None:
    sel = LabelSelector(tuple(sorted(reqs, key=lambda r: (r.key, r.operator, r.values))))
    assert parse_label_selector(str(sel)) == sel


@given(
    st.lists(_requirements, max_size=4),
    st.dictionaries(_label_part, _label_part, max_size=4),
)
def test_selector_matches_iff_every_requirement_matches(
    reqs: list[LabelRequirement], labels: dict[str, str]
) -> None:
    sel = parse_label_selector(",".join(str(r) for r in reqs))
    assert sel.matches(labels) == all(r.matches(labels) for r in reqs)


# --- field selectors ------------------------------------------------------------------------


def test_field_selector_parses_operators_and_normalises_double_equals() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Succeeded,status.phase==Running")
    assert sel.requirements == (
        ("spec.nodeName", "=", "n1"),
        ("status.phase", "!=", "Succeeded"),
        ("status.phase", "=", "Running"),
    )


def test_field_selector_kubectl_describe_node_query() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed")
    assert sel.matches({"spec.nodeName": "n1", "status.phase": "Running"})
    assert not sel.matches({"spec.nodeName": "n1", "status.phase": "Failed"})
    assert not sel.matches({"spec.nodeName": "n2", "status.phase": "Running"})


def test_field_selector_empty_value_matches_missing_field() -> None:
    sel = parse_field_selector("involvedObject.namespace=")
    assert sel.matches({})
    assert not sel.matches({"involvedObject.namespace": "default"})
    assert parse_field_selector("a!=x").matches({})


def test_empty_field_selector_selects_everything() -> None:
    assert parse_field_selector("").empty()
    assert parse_field_selector("").matches({"a": "b"})


def test_field_selector_escapes() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert sel.requirements == (("metadata.name", "=", "a,b=c\\d"),)
    assert str(sel) == r"metadata.name=a\,b\=c\\d"
    assert sel.fields() == frozenset({"metadata.name"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        (r"a=\x", r"invalid escape sequence: \x"),
        ("a=b=c", "unescaped character in value: ="),
        ("a=b\\", "invalid escape sequence: \\"),
    ],
)
def test_bad_field_selectors(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=re.escape(message)):
        parse_field_selector(text)


def test_empty_field_name_parses_and_is_left_to_the_field_whitelist() -> None:
    sel = parse_field_selector("=x,")
    assert sel.requirements == (("", "=", "x"),)
    assert sel.fields() == frozenset({""})


def test_field_name_is_split_at_first_operator() -> None:
    # Field names cannot be escaped; "a!=b=c" splits at "!=" and the value keeps "=".
    with pytest.raises(SelectorError):
        parse_field_selector("a!=b=c")
    assert parse_field_selector(r"a!=b\=c").requirements == (("a", "!=", "b=c"),)


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-zA-Z.]{0,12}", fullmatch=True),
            st.sampled_from(["=", "!="]),
            st.text(max_size=8),
        ),
        max_size=4,
    )
)
def test_field_selector_escape_round_trip(terms: list[tuple[str, str, str]]) -> None:
    text = ",".join(f"{f}{op}{escape_field_value(v)}" for f, op, v in terms)
    parsed = parse_field_selector(text)
    assert sorted(parsed.requirements) == sorted(terms) or not text
    assert parse_field_selector(str(parsed)) == parsed
