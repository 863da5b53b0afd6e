"""Results of prune, default and validate on ``test_schema_fast.CASES``, recorded with the
plain walks (one full pass each, paths built at every node) the skipping walks replaced."""

from typing import Any

EXPECTED: dict[str, dict[str, Any]] = {
    "workload-valid": {"dropped": [], "pruned": [], "defaulted": [], "errors": []},
    "workload-unknown-fields": {
        "dropped": [
            "junk",
            "spec.foo",
            "spec.podSets[0].extra",
            "spec.podSets[0].template.metadata.labels.x.y",
            "status.admission.bar",
            "status.conditions[1].extra",
        ],
        "pruned": [
            ["{}", ["apiVersion", "kind", "metadata", "spec", "status"]],
            ["spec{}", ["queueName", "active", "priorityClassSource", "podSets"]],
            ["spec.podSets[0]{}", ["name", "count", "template"]],
            ["spec.podSets[0].template.metadata.labels.x{}", []],
            [
                "status.conditions[1]{}",
                ["type", "status", "reason", "message", "lastTransitionTime"],
            ],
            ["status.admission{}", ["clusterQueue", "podSetAssignments"]],
        ],
        "defaulted": [],
        "errors": [
            [
                "spec.podSets[0].template.metadata.labels.x",
                "FieldValueTypeInvalid",
                'Invalid value: "object": '
                "spec.podSets[0].template.metadata.labels.x in body must "
                'be of type string: "object"',
            ]
        ],
    },
    "workload-nulls": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["queueName", "active", "priorityClassSource", "podSets"]],
            ["spec.active", True],
            ["spec.podSets[0].name", "main"],
            ["spec.podSets[0].count", 1],
            ["spec.podSets[0].template.metadata.labels{}", []],
            ["status{}", ["admission"]],
            ["status.admission.podSetAssignments[0].flavors{}", []],
        ],
        "errors": [],
    },
    "workload-missing-defaults": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["queueName", "podSets", "priorityClassSource", "active"]],
            ["spec.podSets[0]{}", ["template", "name", "count"]],
            ["spec.podSets[0].name", "main"],
            ["spec.podSets[0].count", 1],
            ["spec.priorityClassSource", ""],
            ["spec.active", True],
        ],
        "errors": [],
    },
    "workload-violations": {
        "dropped": [],
        "pruned": [],
        "defaulted": [],
        "errors": [
            [
                "spec.queueName",
                "FieldValueInvalid",
                'Invalid value: "Bad_Name": spec.queueName in body should '
                "match "
                "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
            ],
            [
                "spec.priorityClassSource",
                "FieldValueNotSupported",
                'Unsupported value: "other": supported values: '
                '"kueue.x-k8s.io/workloadpriorityclass", '
                '"scheduling.k8s.io/priorityclass", ""',
            ],
            [
                "spec.podSets[0].count",
                "FieldValueInvalid",
                "Invalid value: -1: spec.podSets[0].count in body should be "
                "greater than or equal to 0",
            ],
            [
                "spec.podSets[0].template.spec.containers[0].resources.requests.cpu",
                "FieldValueInvalid",
                'Invalid value: "1x": '
                "spec.podSets[0].template.spec.containers[0].resources.requests.cpu "
                "in body should match "
                "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
            ],
            [
                "spec.podSets[0].minCount",
                "FieldValueTypeInvalid",
                'Invalid value: "number": spec.podSets[0].minCount in body '
                'must be of type integer: "number"',
            ],
            [
                "spec.priorityClassName",
                "FieldValueTooLong",
                "Too long: may not be more than 253 bytes",
            ],
            [
                "spec.maximumExecutionTimeSeconds",
                "FieldValueInvalid",
                "Invalid value: 0: spec.maximumExecutionTimeSeconds in body "
                "should be greater than or equal to 1",
            ],
            [
                "status.conditions[0].status",
                "FieldValueNotSupported",
                'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
            ],
            [
                "status.conditions[0].reason",
                "FieldValueInvalid",
                'Invalid value: "": status.conditions[0].reason in body '
                "should be at least 1 chars long",
            ],
            [
                "status.conditions[0].reason",
                "FieldValueInvalid",
                'Invalid value: "": status.conditions[0].reason in body '
                "should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'",
            ],
            [
                "status.conditions[1].lastTransitionTime",
                "FieldValueTypeInvalid",
                'Invalid value: "yesterday": '
                "status.conditions[1].lastTransitionTime in body must be of "
                'type date-time: "yesterday"',
            ],
            ["status.admission.clusterQueue", "FieldValueRequired", "Required value"],
            [
                "status.admission.podSetAssignments[0].resourceUsage.cpu",
                "FieldValueTypeInvalid",
                'Invalid value: "array": '
                "status.admission.podSetAssignments[0].resourceUsage.cpu in "
                'body must be of type integer,string: "array"',
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": '
                '"status.admission.podSetAssignments[0].resourceUsage.cpu" '
                "must validate at least one schema (anyOf)",
            ],
            [
                "status.admission.podSetAssignments[0].resourceUsage.cpu",
                "FieldValueTypeInvalid",
                'Invalid value: "array": '
                "status.admission.podSetAssignments[0].resourceUsage.cpu in "
                'body must be of type integer: "array"',
            ],
            [
                "status.conditions[1]",
                "FieldValueDuplicate",
                'Duplicate value: {"type":"QuotaReserved"}',
            ],
        ],
    },
    "workload-wrong-types": {
        "dropped": ["status.conditions.type"],
        "pruned": [["status.conditions{}", []]],
        "defaulted": [],
        "errors": [
            [
                "spec.active",
                "FieldValueTypeInvalid",
                'Invalid value: "string": spec.active in body must be of type boolean: "string"',
            ],
            [
                "spec.podSets[0].count",
                "FieldValueTypeInvalid",
                'Invalid value: "string": spec.podSets[0].count in body must '
                'be of type integer: "string"',
            ],
            [
                "spec.podSets[0].template",
                "FieldValueTypeInvalid",
                'Invalid value: "array": spec.podSets[0].template in body '
                'must be of type object: "array"',
            ],
            [
                "status.conditions",
                "FieldValueTypeInvalid",
                'Invalid value: "object": status.conditions in body must be '
                'of type array: "object"',
            ],
            [
                "status.admission.podSetAssignments[0]",
                "FieldValueTypeInvalid",
                'Invalid value: "null": '
                "status.admission.podSetAssignments[0] in body must be of "
                'type object: "null"',
            ],
            [
                "status.admission.podSetAssignments[1]",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": '
                "status.admission.podSetAssignments[1] in body must be of "
                'type object: "integer"',
            ],
        ],
    },
    "workload-list-bounds-and-duplicates": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            [
                "status.admission.podSetAssignments[0]{}",
                ["flavors", "resourceUsage", "count", "name"],
            ],
            ["status.admission.podSetAssignments[0].name", "main"],
        ],
        "errors": [
            ["spec.podSets", "FieldValueTooMany", "Too many: 19: must have at most 18 items"],
            ["spec.podSets[17]", "FieldValueDuplicate", 'Duplicate value: {"name":"p0"}'],
            ["spec.podSets[18]", "FieldValueDuplicate", 'Duplicate value: {"name":"p1"}'],
        ],
    },
    "workload-empty-pod-sets": {
        "dropped": [],
        "pruned": [],
        "defaulted": [],
        "errors": [
            [
                "spec.podSets",
                "FieldValueInvalid",
                "Invalid value: []: spec.podSets in body should have at least 1 items",
            ]
        ],
    },
    "workload-required": {
        "dropped": [],
        "pruned": [],
        "defaulted": [],
        "errors": [["spec.podSets", "FieldValueRequired", "Required value"]],
    },
    "workload-unchanged-status": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["queueName", "priorityClassSource", "podSets", "active"]],
            ["spec.podSets[0].count", 1],
            ["spec.active", True],
        ],
        "errors": [],
    },
    "workload-unchanged-spec": {
        "dropped": ["status.junk"],
        "pruned": [["status{}", ["conditions", "admission"]]],
        "defaulted": [],
        "errors": [],
    },
    "event-valid": {"dropped": [], "pruned": [], "defaulted": [], "errors": []},
    "event-unknown-fields-and-nulls": {
        "dropped": ["involvedObject.junk", "series.extra"],
        "pruned": [["involvedObject{}", ["kind", "name", "namespace"]], ["series{}", ["count"]]],
        "defaulted": [
            [
                "{}",
                [
                    "apiVersion",
                    "kind",
                    "metadata",
                    "involvedObject",
                    "reason",
                    "source",
                    "firstTimestamp",
                    "eventTime",
                    "count",
                    "type",
                    "reportingComponent",
                    "series",
                ],
            ],
            ["source{}", ["component"]],
            ["reportingComponent", ""],
            ["series{}", []],
        ],
        "errors": [],
    },
    "event-violations": {
        "dropped": [],
        "pruned": [],
        "defaulted": [],
        "errors": [
            ["involvedObject", "FieldValueRequired", "Required value"],
            [
                "source",
                "FieldValueTypeInvalid",
                'Invalid value: "string": source in body must be of type object: "string"',
            ],
            [
                "firstTimestamp",
                "FieldValueTypeInvalid",
                'Invalid value: "2024-13": firstTimestamp in body must be of '
                'type date-time: "2024-13"',
            ],
            [
                "count",
                "FieldValueTypeInvalid",
                'Invalid value: "string": count in body must be of type integer: "string"',
            ],
            [
                "type",
                "FieldValueNotSupported",
                'Unsupported value: "Fatal": supported values: "Normal", "Warning"',
            ],
            [
                "series.count",
                "FieldValueTypeInvalid",
                'Invalid value: "number": series.count in body must be of type integer: "number"',
            ],
            [
                "series.lastObservedTime",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": series.lastObservedTime in body must '
                'be of type string: "integer"',
            ],
        ],
    },
    "event-missing-default": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            [
                "{}",
                [
                    "apiVersion",
                    "kind",
                    "involvedObject",
                    "reason",
                    "message",
                    "source",
                    "firstTimestamp",
                    "eventTime",
                    "count",
                    "type",
                    "reportingComponent",
                ],
            ],
            ["reportingComponent", ""],
        ],
        "errors": [["metadata", "FieldValueRequired", "Required value"]],
    },
    "sink-valid": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["a", "l", "q", "all", "alt", "one", "not", "res", "n", "d"]],
            ["spec.n", 3],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [],
    },
    "sink-defaults": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            [
                "spec{}",
                ["l", "q", "all", "alt", "one", "not", "res", "n", "m", "md", "ls", "d", "a"],
            ],
            ["spec.l[0]", {"k": "d", "v": 7}],
            ["spec.l[1]{}", ["k", "v"]],
            ["spec.l[1].v", 7],
            ["spec.l[2].v", 7],
            ["spec.m.x", {"n": 1}],
            ["spec.m.y{}", ["z", "n"]],
            ["spec.m.y.n", 1],
            ["spec.m.w.n", 1],
            ["spec.md.a", "d"],
            ["spec.d", {"inner": {"x": "ix"}}],
            ["spec.a", "x"],
        ],
        "errors": [],
    },
    "sink-pruning": {
        "dropped": [
            "spec.l[0].junk",
            "spec.ls[1].a",
            "spec.one.r",
            "spec.pres.l[0].x",
            "spec.pres.t.v",
            "spec.res.junk",
            "spec.res.spec.junk",
        ],
        "pruned": [
            ["spec.l[0]{}", ["k", "v"]],
            ["spec.one{}", ["p"]],
            ["spec.res{}", ["apiVersion", "kind", "spec", "metadata"]],
            ["spec.res.spec{}", ["r"]],
            ["spec.pres.t{}", ["u"]],
            ["spec.pres.l[0]{}", ["w"]],
            ["spec.ls[1]{}", []],
        ],
        "defaulted": [
            [
                "spec{}",
                ["a", "l", "q", "all", "alt", "one", "not", "res", "pres", "free", "ls", "n", "d"],
            ],
            ["spec.n", 3],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [
            [
                "spec.pres.l[1]",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": spec.pres.l[1] in body must be of type '
                'object: "integer"',
            ],
            [
                "spec.ls[0]",
                "FieldValueTypeInvalid",
                'Invalid value: "array": spec.ls[0] in body must be of type string: "array"',
            ],
            [
                "spec.ls[1]",
                "FieldValueTypeInvalid",
                'Invalid value: "object": spec.ls[1] in body must be of type string: "object"',
            ],
        ],
    },
    "sink-junctors": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["a", "l", "q", "all", "alt", "one", "not", "res", "n", "d"]],
            ["spec.n", 3],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [
            [
                "spec.q",
                "FieldValueInvalid",
                "Invalid value: \"5Gi\": spec.q in body should match '^[0-9]+$'",
            ],
            ["spec.all", "FieldValueTooLong", "Too long: may not be more than 3 bytes"],
            [
                "spec.all",
                "FieldValueInvalid",
                "Invalid value: \"bcdef\": spec.all in body should match '^a'",
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.all" must validate all the schemas (allOf)',
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.one" must validate one and only one '
                "schema (oneOf). Found 2 valid alternatives",
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.not" must not validate the schema (not)',
            ],
        ],
    },
    "sink-junctors-none-valid": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["a", "l", "q", "all", "alt", "one", "not", "res", "n", "d"]],
            ["spec.n", 3],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [
            [
                "spec.q",
                "FieldValueTypeInvalid",
                'Invalid value: "boolean": spec.q in body must be of '
                'type integer,string: "boolean"',
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.q" must validate at least one schema (anyOf)',
            ],
            [
                "spec.q",
                "FieldValueTypeInvalid",
                'Invalid value: "boolean": spec.q in body must be of type integer: "boolean"',
            ],
            [
                "spec.all",
                "FieldValueInvalid",
                "Invalid value: \"\": spec.all in body should match '^a'",
            ],
            [
                "spec.all",
                "FieldValueInvalid",
                'Invalid value: "": spec.all in body should be at least 1 chars long',
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.all" must validate all the schemas (allOf)',
            ],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.alt" must validate at least one schema (anyOf)',
            ],
            ["spec.alt", "FieldValueTooLong", "Too long: may not be more than 2 bytes"],
            [
                "<nil>",
                "FieldValueInvalid",
                'Invalid value: "": "spec.one" must validate one and '
                "only one schema (oneOf). Found none valid",
            ],
            ["spec.one.p", "FieldValueRequired", "Required value"],
            [
                "spec.not",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": spec.not in body must be of type string: "integer"',
            ],
        ],
    },
    "sink-bounds-and-formats": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            [
                "spec{}",
                [
                    "a",
                    "l",
                    "q",
                    "all",
                    "alt",
                    "one",
                    "not",
                    "res",
                    "n",
                    "f",
                    "ls",
                    "fmt",
                    "props",
                    "d",
                ],
            ],
            ["spec.l[0]{}", ["k", "v"]],
            ["spec.l[0].v", 7],
            ["spec.l[1]{}", ["k", "v"]],
            ["spec.l[1].v", 7],
            ["spec.l[2]{}", ["k", "v"]],
            ["spec.l[2].v", 7],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [
            [
                "spec.a",
                "FieldValueTypeInvalid",
                'Invalid value: "number": spec.a in body must be of type string: "number"',
            ],
            ["spec.l", "FieldValueTooMany", "Too many: 4: must have at most 3 items"],
            [
                "spec.res.apiVersion",
                "FieldValueInvalid",
                'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
            ],
            [
                "spec.res.kind",
                "FieldValueInvalid",
                'Invalid value: "Bad Kind!": may have mixed case, but '
                "should otherwise match: a DNS-1035 label must consist of "
                "lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric "
                "character",
            ],
            [
                "spec.n",
                "FieldValueInvalid",
                "Invalid value: 5: spec.n in body should be less than 5",
            ],
            [
                "spec.f",
                "FieldValueInvalid",
                "Invalid value: 1.25: spec.f in body should be a multiple of 0.5",
            ],
            [
                "spec.ls",
                "FieldValueInvalid",
                'Invalid value: ["a","b","a",null,null]: spec.ls in body '
                "shouldn't contain duplicates",
            ],
            [
                "spec.fmt.b",
                "FieldValueTypeInvalid",
                'Invalid value: "not base64!": spec.fmt.b in body must be '
                'of type byte: "not base64!"',
            ],
            [
                "spec.fmt.d",
                "FieldValueTypeInvalid",
                'Invalid value: "2024-1-1": spec.fmt.d in body must be of type date: "2024-1-1"',
            ],
            [
                "spec.fmt.u",
                "FieldValueTypeInvalid",
                'Invalid value: "nope": spec.fmt.u in body must be of type uuid: "nope"',
            ],
            ["spec.props", "FieldValueTooMany", "Too many: 3: must have at most 2 items"],
            [
                "spec.props.c",
                "FieldValueTypeInvalid",
                'Invalid value: "string": spec.props.c in body must be of type boolean: "string"',
            ],
            ["spec.l[1]", "FieldValueDuplicate", 'Duplicate value: {"k":"a"}'],
            ["spec.ls[2]", "FieldValueDuplicate", 'Duplicate value: "a"'],
            ["spec.ls[4]", "FieldValueDuplicate", "Duplicate value: null"],
        ],
    },
    "sink-more-bounds": {
        "dropped": [],
        "pruned": [],
        "defaulted": [
            ["spec{}", ["a", "l", "q", "all", "alt", "one", "not", "res", "n", "f", "props", "d"]],
            ["spec.d", {"inner": {"x": "ix"}}],
        ],
        "errors": [
            [
                "spec.a",
                "FieldValueNotSupported",
                'Unsupported value: "z": supported values: "x", "y", "1"',
            ],
            [
                "spec.l",
                "FieldValueInvalid",
                "Invalid value: []: spec.l in body should have at least 1 items",
            ],
            ["spec.res.apiVersion", "FieldValueInvalid", "Invalid value: 1: must be a string"],
            ["spec.res.kind", "FieldValueInvalid", 'Invalid value: "": must not be empty'],
            [
                "spec.res.apiVersion",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": spec.res.apiVersion in body must be '
                'of type string: "integer"',
            ],
            [
                "spec.n",
                "FieldValueInvalid",
                "Invalid value: 0: spec.n in body should be greater than 0",
            ],
            [
                "spec.f",
                "FieldValueInvalid",
                "Invalid value: 11: spec.f in body should be less than or equal to 10",
            ],
            [
                "spec.props",
                "FieldValueInvalid",
                "Invalid value: {}: spec.props in body should have at least 1 properties",
            ],
        ],
    },
    "sink-root-types": {
        "dropped": [],
        "pruned": [],
        "defaulted": [],
        "errors": [
            [
                "spec",
                "FieldValueTypeInvalid",
                'Invalid value: "array": spec in body must be of type object: "array"',
            ],
            [
                "status",
                "FieldValueTypeInvalid",
                'Invalid value: "string": status in body must be of type object: "string"',
            ],
        ],
    },
}
