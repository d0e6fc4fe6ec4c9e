"""Sends each case of a JSON list on stdin as Python's standard library does, one JSON line each.

A case: {"url", "headers", "bytes", "fill", "keepAlive"}. A fresh connection is urllib.request's
(what a script would use); keep-alive is http.client's own connection, warmed by a GET of
/healthz so that the POST goes out on a connection that already served a request. The answer
line: {"status", "body"}, or {"error"} when no answer was read.
"""
import http.client
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def fresh(case, body):
    request = urllib.request.Request(case["url"], data=body, method="POST", headers=case["headers"])
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return {"status": answer.status, "body": answer.read().decode("utf-8", "replace")}
    except urllib.error.HTTPError as refusal:
        return {"status": refusal.code, "body": refusal.read().decode("utf-8", "replace")}


def kept_alive(case, body):
    url = urllib.parse.urlsplit(case["url"])
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        connection.request("GET", "/healthz")
        connection.getresponse().read()
        connection.request("POST", url.path, body=body, headers=case["headers"])
        answer = connection.getresponse()
        return {"status": answer.status, "body": answer.read().decode("utf-8", "replace")}
    finally:
        connection.close()


def main():
    bodies = {}
    for case in json.load(sys.stdin):
        key = (case["bytes"], case["fill"])
        if key not in bodies:
            bodies[key] = case["fill"].encode("ascii") * case["bytes"]
        try:
            line = (kept_alive if case["keepAlive"] else fresh)(case, bodies[key])
        except Exception as error:  # what the caller would see instead of an answer
            line = {"error": repr(error)}
        print(json.dumps(line), flush=True)


main()
