"""Translate a SAM template to plain CloudFormation offline, as `sam deploy` would.

Used by translate_test.go. It runs samtranslator (installed with cfn-lint) with no AWS
account: function code URIs are replaced by an S3 URI as `sam package` would, the region
comes from a boto3 Session built here (no credentials, no request), and managed policies
named by their short name resolve through an empty map, so a template that needs one fails
here instead of asking IAM. Prints one JSON object: {"template": <CloudFormation>,
"regions": [{"name", "partition", "dnsSuffix"}...]}, the regions being every one botocore
knows, so the caller can test names in the longest of them.

Usage: python3 translate.py TEMPLATE REGION ACCOUNT_ID [PARAMETERS_JSON]
Exit 3: samtranslator (or boto3) is not installed.
"""

import json
import sys

try:
    import boto3
    from botocore.loaders import Loader
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse
except ImportError as e:  # the Go test turns this into testenv.Missing
    print(f"samtranslator is not installed: {e}", file=sys.stderr)
    sys.exit(3)


class NoIAMPolicyLoader(ManagedPolicyLoader):
    """A ManagedPolicyLoader that never calls IAM: no AWS-managed policy by short name."""

    def __init__(self):
        super().__init__(iam_client=None)

    def load(self):
        return {}


def regions():
    out = []
    for p in Loader().load_data("endpoints")["partitions"]:
        for name in p["regions"]:
            out.append({"name": name, "partition": p["partition"], "dnsSuffix": p["dnsSuffix"]})
    return out


def main():
    path, region, account = sys.argv[1], sys.argv[2], sys.argv[3]
    params = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = "s3://sam-package-bucket/function.zip"
    params = dict(params, **{"AWS::AccountId": account})
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    out = translator.translate(template, parameter_values=params, get_managed_policy_map=NoIAMPolicyLoader().load)
    json.dump({"template": out, "regions": regions()}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
