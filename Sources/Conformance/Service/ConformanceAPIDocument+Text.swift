// Written by scripts/lib/api_document.py from docs/conformance-api.json: edit the document, then run it.

extension ConformanceAPIDocument {
    /// docs/conformance-api.json, as the service serves it before the catalogue's names are added.
    static let text = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "rangecheck serve: the conformance API",
            "version": "1.2.0",
            "description": "A client anywhere asks for a run of a scenario, downloads the URLs it is handed however it likes (performing the steps it is given), and reports what it ended with. The server judges the run from its request journal and the report, with the same judge as `rangecheck`. With `--token`, every operation needs `Authorization: Bearer TOKEN` (or `?token=TOKEN`, or the `rangecheck-token` cookie a `?token=` request sets); without it, only loopback peers are answered (403 otherwise). Every error is a 4xx with a one-line JSON body `{\"error\": ...}`, except 413 for a request body over 8 MiB (a line of text from the server). The service enforces every constraint this document states, and no other but those a schema cannot say, each named in a description and answered 409 (the report cannot stand as its run's outcome; nothing is kept and the run can be reported again): a report has one output per URL its run handed out (no route twice, no other route), with names where its row asks for them, and each `blocks` list has one digest per 64 KiB of its output's `size`. Runs are held in memory up to `--run-limit` (10,000) and each is forgotten after `--run-expiry` (an hour) without a request naming it; a request naming a run the service forgot by itself is answered 410, and one naming a run deleted with `DELETE` 404, as any deleted resource. `GET /_conformance/openapi.json` serves this document with the running catalogue's scenario and route names as enums, the schemes the server has ports for, and the rule between `scenario` and `scheme` as an `anyOf` of the rows each set of schemes takes. Tests/ConformanceTests/ServiceAPIDocumentTests.swift validates the server against this document, and `scripts/check-api` runs schemathesis against a live service."
          },
          "servers": [
            {
              "url": "http://127.0.0.1:8090"
            }
          ],
          "security": [
            {
              "bearer": []
            },
            {
              "queryToken": []
            },
            {
              "cookieToken": []
            }
          ],
          "paths": {
            "/_conformance/scenarios": {
              "get": {
                "operationId": "listScenarios",
                "summary": "The scenario catalogue",
                "responses": {
                  "200": {
                    "description": "Every scenario, in name order.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/ScenarioList"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  }
                }
              }
            },
            "/_conformance/runs": {
              "post": {
                "operationId": "createRun",
                "summary": "Ask for a run of one scenario",
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/RunRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "201": {
                    "description": "The run: what to download and what to do meanwhile.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/RunCreated"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Error"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  },
                  "413": {
                    "$ref": "#/components/responses/TooLarge"
                  }
                },
                "description": "400 for a body the schema refuses (an unknown property, a null, a label with a control character), or a `scheme` on a server without its port (`https`: `--tls-port`, `h2`: `--h2-port`, `h2c`: `--h2c-port`), or a row that does not run over the scheme (an `h2-*` row over http or https, an `http1-only` row over h2 or h2c); 404 for a scenario not in the catalogue (which leaves out `dead-ipv6` rows: their URL must resolve to a dead IPv6 address beside the server, which only `rangecheck run` can arrange)."
              }
            },
            "/_conformance/runs/{run}": {
              "get": {
                "operationId": "getRun",
                "summary": "A run's state: pending, or judged with its verdict",
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Run"
                  }
                ],
                "responses": {
                  "200": {
                    "description": "The run.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/RunStatus"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  },
                  "410": {
                    "$ref": "#/components/responses/Gone"
                  }
                },
                "description": "404 for a string that was never a run token, or a run deleted with `DELETE`; 410 for a run the service forgot by itself (expired, pushed out by newer runs, or issued before a restart)."
              },
              "delete": {
                "operationId": "deleteRun",
                "summary": "Forget a run: a pending one is dropped, a judged one's verdict leaves the report and the results file",
                "description": "A judged run's verdict is removed from the live report and from `--results` (the file is rewritten without it, so a restart does not bring it back); the cell then shows the pair's previous verdict, if the file has one. A pending run is forgotten: a later request naming it is answered 404, saying it was deleted.",
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Run"
                  }
                ],
                "responses": {
                  "200": {
                    "description": "What was removed.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Removal"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  },
                  "409": {
                    "$ref": "#/components/responses/Error"
                  },
                  "410": {
                    "$ref": "#/components/responses/Gone"
                  }
                }
              }
            },
            "/_conformance/runs/{run}/result": {
              "post": {
                "operationId": "reportResult",
                "summary": "Report how the download ended and what it left; answered with the verdict",
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Run"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/ResultReport"
                      }
                    }
                  }
                },
                "responses": {
                  "200": {
                    "description": "The verdict, also kept in the results file.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Verdict"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Error"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  },
                  "409": {
                    "$ref": "#/components/responses/Error"
                  },
                  "410": {
                    "$ref": "#/components/responses/Gone"
                  },
                  "413": {
                    "$ref": "#/components/responses/TooLarge"
                  }
                },
                "description": "400 for a body the schema refuses: it is refused before the run is looked up, so it is a 400 whether or not the run is held. 409 for a run already reported, or a report that cannot stand as its run's outcome by a rule no schema states: one output per URL the run handed out (no route twice, no other route), each with its `name` for a row whose client names its files, and a `blocks` list of one SHA-256 per 64 KiB block of `size` (for an output that exists). Nothing is kept after a 400 or that second kind of 409, and the run can be reported again. 404 for a run deleted; 410 for a run the service forgot by itself."
              }
            },
            "/_conformance/runs/{run}/prefill": {
              "get": {
                "operationId": "getPrefill",
                "summary": "The bytes a prefill step puts at the start of an output (not journaled: not a download under test)",
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Run"
                  },
                  {
                    "name": "route",
                    "in": "query",
                    "required": false,
                    "schema": {
                      "type": "string"
                    },
                    "description": "The output's route; absent for a single-file scenario."
                  }
                ],
                "responses": {
                  "200": {
                    "description": "The bytes.",
                    "content": {
                      "application/octet-stream": {
                        "schema": {
                          "type": "string",
                          "contentEncoding": "binary"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Error"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  },
                  "410": {
                    "$ref": "#/components/responses/Gone"
                  }
                },
                "description": "400 for a `route` given more than once or one no scenario has (before the run is looked up); 404 for a run without a prefill step or without that route, one already judged, or one deleted; 410 for a run the service forgot by itself."
              }
            },
            "/_conformance/ca.pem": {
              "get": {
                "operationId": "getCertificateAuthority",
                "summary": "The CA certificate an https run's client must trust",
                "responses": {
                  "200": {
                    "description": "PEM.",
                    "content": {
                      "application/x-pem-file": {
                        "schema": {
                          "type": "string"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Error"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  }
                }
              }
            },
            "/_conformance/report": {
              "get": {
                "operationId": "getReport",
                "summary": "The live matrix of every client label that reported: HTML that refreshes itself, or JSON, JUnit or Markdown",
                "parameters": [
                  {
                    "name": "format",
                    "in": "query",
                    "required": false,
                    "schema": {
                      "type": "string",
                      "enum": [
                        "html",
                        "json",
                        "junit",
                        "markdown"
                      ],
                      "default": "html"
                    }
                  }
                ],
                "responses": {
                  "200": {
                    "description": "The report.",
                    "content": {
                      "text/html": {
                        "schema": {
                          "type": "string"
                        }
                      },
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Report"
                        }
                      },
                      "application/xml": {
                        "schema": {
                          "type": "string"
                        }
                      },
                      "text/markdown": {
                        "schema": {
                          "type": "string"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Error"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  }
                }
              }
            },
            "/_conformance/report/{scenario}/{client}": {
              "get": {
                "operationId": "getRunPicture",
                "summary": "The picture of a cell's latest run: its requests on a timeline and its output's content map",
                "parameters": [
                  {
                    "name": "scenario",
                    "in": "path",
                    "required": true,
                    "schema": {
                      "type": "string"
                    }
                  },
                  {
                    "name": "client",
                    "in": "path",
                    "required": true,
                    "schema": {
                      "type": "string"
                    },
                    "description": "The column: the client label, with ` (https)` for an https run."
                  }
                ],
                "responses": {
                  "200": {
                    "description": "An HTML page.",
                    "content": {
                      "text/html": {
                        "schema": {
                          "type": "string"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  }
                }
              }
            },
            "/_conformance/columns/{column}": {
              "delete": {
                "operationId": "deleteColumn",
                "summary": "Remove a column from the live report, with every verdict under it",
                "description": "Removes the column's verdicts from the report and from `--results` (the file is rewritten without them, so a restart does not bring them back), and forgets the runs handed out under the column and not yet reported (a later request naming one is answered 404, saying it was deleted).",
                "parameters": [
                  {
                    "name": "column",
                    "in": "path",
                    "required": true,
                    "schema": {
                      "type": "string"
                    },
                    "description": "The column as the report names it: the client label, with ` (https)` for its https runs."
                  }
                ],
                "responses": {
                  "200": {
                    "description": "What was removed.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Removal"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/Error"
                  }
                }
              }
            },
            "/_conformance/openapi.json": {
              "get": {
                "operationId": "getAPIDocument",
                "summary": "This document, with the running catalogue's scenario names and route names as enums and this server's address",
                "responses": {
                  "200": {
                    "description": "The OpenAPI document.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "type": "object"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  }
                }
              }
            }
          },
          "components": {
            "parameters": {
              "Run": {
                "name": "run",
                "in": "path",
                "required": true,
                "schema": {
                  "type": "string"
                },
                "description": "The run token from createRun."
              }
            },
            "responses": {
              "Error": {
                "description": "The request cannot be answered; nothing already judged is lost.",
                "content": {
                  "application/json": {
                    "schema": {
                      "$ref": "#/components/schemas/Error"
                    }
                  }
                }
              },
              "Unauthorized": {
                "description": "With `--token`: the request did not carry the token.",
                "content": {
                  "application/json": {
                    "schema": {
                      "$ref": "#/components/schemas/Error"
                    }
                  }
                }
              },
              "Forbidden": {
                "description": "Without `--token`: the peer is not on loopback.",
                "content": {
                  "application/json": {
                    "schema": {
                      "$ref": "#/components/schemas/Error"
                    }
                  }
                }
              },
              "Gone": {
                "description": "The run was issued by this service, and the service forgot it by itself: unused for `--run-expiry`, pushed out by newer runs beyond `--run-limit`, or issued before a restart (a run deleted with `DELETE` is a 404). Ask for a new run.",
                "content": {
                  "application/json": {
                    "schema": {
                      "$ref": "#/components/schemas/Error"
                    }
                  }
                }
              },
              "TooLarge": {
                "description": "The request body is over 8 MiB; the server answers before the API reads it.",
                "content": {
                  "text/plain": {
                    "schema": {
                      "type": "string"
                    }
                  }
                }
              }
            },
            "schemas": {
              "Error": {
                "type": "object",
                "required": [
                  "error"
                ],
                "additionalProperties": false,
                "properties": {
                  "error": {
                    "type": "string",
                    "description": "One line."
                  }
                }
              },
              "Step": {
                "type": "object",
                "description": "Exactly one of kill-at, pause-at, cancel-at, prefill and disk-full-at, with the threshold as the scenario wrote it.",
                "required": [
                  "bytes"
                ],
                "additionalProperties": false,
                "properties": {
                  "kill-at": {
                    "type": "string",
                    "description": "Stop the download process abruptly once this much is on disk (count allocated blocks, not file length), then start the same download again."
                  },
                  "pause-at": {
                    "type": "string",
                    "description": "Pause the download once this much is on disk, for `for`, then let it go on."
                  },
                  "for": {
                    "type": "string",
                    "description": "With pause-at: how long, e.g. 2s or 1500ms."
                  },
                  "cancel-at": {
                    "type": "string",
                    "description": "Cancel the download once this much is on disk; report the outcome cancelled."
                  },
                  "prefill": {
                    "type": "string",
                    "description": "Before starting, put this much of the expected content at the start of each output (fetched from urls)."
                  },
                  "disk-full-at": {
                    "type": "string",
                    "description": "Run the download with its outputs and the client's state on a filesystem with only this much room (e.g. a size-capped tmpfs); once the client has ended, give the filesystem room and run the same download again. Report the first run's outcome as disk-full-outcome. A conforming client reports failure on the full disk, keeps a correct prefix, and resumes fetching at most the row's max-refetched twice."
                  },
                  "bytes": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The threshold in bytes: of all outputs together, or per output for prefill; for disk-full-at the filesystem's room."
                  },
                  "urls": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/HandedURL"
                    },
                    "description": "With prefill, in a run: where to fetch each output's prefill bytes."
                  }
                }
              },
              "HandedURL": {
                "type": "object",
                "required": [
                  "route",
                  "url"
                ],
                "additionalProperties": false,
                "properties": {
                  "route": {
                    "type": "string",
                    "description": "The route name; empty for a single-file scenario."
                  },
                  "url": {
                    "type": "string",
                    "description": "The absolute URL."
                  }
                }
              },
              "ScenarioList": {
                "type": "object",
                "required": [
                  "scenarios"
                ],
                "additionalProperties": false,
                "properties": {
                  "scenarios": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "required": [
                        "name",
                        "description",
                        "files",
                        "steps",
                        "tags",
                        "rfc",
                        "seen-in"
                      ],
                      "additionalProperties": false,
                      "properties": {
                        "name": {
                          "type": "string"
                        },
                        "description": {
                          "type": "string"
                        },
                        "files": {
                          "type": "array",
                          "items": {
                            "type": "string"
                          },
                          "description": "Routes downloaded as separate outputs; empty for one output."
                        },
                        "steps": {
                          "type": "array",
                          "items": {
                            "$ref": "#/components/schemas/Step"
                          }
                        },
                        "tags": {
                          "type": "array",
                          "items": {
                            "type": "string"
                          }
                        },
                        "expect": {
                          "type": "object",
                          "description": "The scenario's expect section as its file wrote it (docs/conformance.md)."
                        },
                        "rfc": {
                          "$ref": "#/components/schemas/Citations",
                          "description": "The RFC sections the row rests on, like \"RFC 9110 §13.1.5\", or {\"none\": \"why\"} for a row no RFC decides (efficiency, timeouts) (docs/conformance.md, \"What each row rests on\")."
                        },
                        "seen-in": {
                          "$ref": "#/components/schemas/Citations",
                          "description": "Public reports of the row's failure in real clients, as GitHub issues or pull requests like \"curl/curl#1163\", or {\"none\": \"why\"}."
                        }
                      }
                    }
                  }
                }
              },
              "Citations": {
                "description": "A row's rfc or seen-in, as its scenario file writes it: a non-empty list of distinct references, or an object saying why there is none.",
                "anyOf": [
                  {
                    "type": "array",
                    "items": {
                      "type": "string",
                      "minLength": 1
                    }
                  },
                  {
                    "type": "object",
                    "required": [
                      "none"
                    ],
                    "additionalProperties": false,
                    "properties": {
                      "none": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Why the row has no reference."
                      }
                    }
                  }
                ]
              },
              "RunRequest": {
                "type": "object",
                "required": [
                  "scenario",
                  "client"
                ],
                "additionalProperties": false,
                "properties": {
                  "scenario": {
                    "type": "string",
                    "description": "A scenario name from `GET /_conformance/scenarios` (the served document lists them as an enum); 404 for another."
                  },
                  "client": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 100,
                    "not": {
                      "anyOf": [
                        {
                          "pattern": "[\\x00-\\x1F\\x7F-\\x9F\\u2028\\u2029]"
                        },
                        {
                          "pattern": "^ "
                        },
                        {
                          "pattern": " $"
                        }
                      ]
                    },
                    "description": "The column the verdict goes under: 1 to 100 characters (Unicode code points), none a control character (U+0000-U+001F, U+007F-U+009F) or a line or paragraph separator (U+2028, U+2029), no space at either end."
                  },
                  "scheme": {
                    "type": "string",
                    "enum": [
                      "http",
                      "https",
                      "h2",
                      "h2c"
                    ],
                    "default": "http",
                    "description": "`https` hands out URLs on the TLS port, `h2` on the HTTP/2 TLS port, `h2c` on the cleartext HTTP/2 port; 400 on a server without that port (start it with `--tls-port`, `--h2-port`, `--h2c-port`), and for a row that does not run over the scheme (`h2-*` rows need h2 or h2c, `http1-only` rows http or https). Over h2 and h2c a client whose requests did not come over HTTP/2 gets n/a."
                  },
                  "segmented": {
                    "type": "boolean",
                    "description": "Whether the client fetches one file over several connections (judged by the segment rule, which allows requests of one file in flight together); absent means false."
                  }
                }
              },
              "RunCreated": {
                "type": "object",
                "required": [
                  "run",
                  "scenario",
                  "client",
                  "scheme",
                  "urls",
                  "steps",
                  "result"
                ],
                "additionalProperties": false,
                "properties": {
                  "run": {
                    "type": "string"
                  },
                  "scenario": {
                    "type": "string"
                  },
                  "client": {
                    "type": "string"
                  },
                  "scheme": {
                    "type": "string",
                    "enum": [
                      "http",
                      "https",
                      "h2",
                      "h2c"
                    ]
                  },
                  "urls": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/HandedURL"
                    }
                  },
                  "steps": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Step"
                    }
                  },
                  "ca": {
                    "type": "string",
                    "description": "The CA certificate (PEM) to trust, when the run reaches https."
                  },
                  "authorization": {
                    "type": "string",
                    "description": "The Authorization header value to send with every request, as a user configures a token; present only for rows that have one (a redirect that leaves the origin sees whether the client forwards it)."
                  },
                  "output-names": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    },
                    "minItems": 1,
                    "description": "For a row whose client names its file from the server's Content-Disposition (name-change-on-resume): the names it may end under. Give the client a directory, not a file name, and report every file it leaves there with its `name`; a partial copy left under another of these names fails. Absent for other rows."
                  },
                  "result": {
                    "type": "string",
                    "description": "Where to POST the result."
                  }
                }
              },
              "ReportedOutput": {
                "type": "object",
                "required": [
                  "route"
                ],
                "additionalProperties": false,
                "properties": {
                  "route": {
                    "type": "string",
                    "description": "The route of a URL the run handed out (the served document lists the catalogue's routes as an enum); empty for a single-file scenario."
                  },
                  "exists": {
                    "type": "boolean",
                    "description": "false when the client left no file; absent means it exists."
                  },
                  "size": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 9007199254740991,
                    "description": "In bytes, at most 2^53 - 1 (the largest integer JSON carries exactly everywhere)."
                  },
                  "sha256": {
                    "type": "string",
                    "pattern": "^[0-9a-fA-F]{64}$",
                    "description": "The whole file's SHA-256, 64 hex digits."
                  },
                  "blocks": {
                    "type": "array",
                    "items": {
                      "type": "string",
                      "pattern": "^[0-9a-fA-F]{64}$"
                    },
                    "description": "The SHA-256 of each 64 KiB block, in order (the last may be shorter): exactly one per 64 KiB of size, rounded up (409 otherwise)."
                  },
                  "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": "^[^/\\x00-\\x1F\\x7F]+$",
                    "not": {
                      "enum": [".", ".."]
                    },
                    "description": "The file's name, for a run handed `output-names`: report every file the client left in its directory, each with its name (409 without it there). 1 to 255 characters (Unicode code points), none `/` or a control character (U+0000-U+001F, U+007F); not `.` or `..`. Absent otherwise."
                  }
                },
                "description": "An output that exists gives its size and its digests (blocks, sha256 or both); one that does not gives `exists: false`.",
                "anyOf": [
                  {
                    "required": [
                      "exists"
                    ],
                    "properties": {
                      "exists": {
                        "const": false
                      }
                    }
                  },
                  {
                    "required": [
                      "size",
                      "sha256"
                    ]
                  },
                  {
                    "required": [
                      "size",
                      "blocks"
                    ]
                  }
                ]
              },
              "ResultReport": {
                "type": "object",
                "required": [
                  "outcome",
                  "outputs"
                ],
                "additionalProperties": false,
                "properties": {
                  "outcome": {
                    "type": "string",
                    "enum": [
                      "success",
                      "failure",
                      "cancelled"
                    ]
                  },
                  "outputs": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/ReportedOutput"
                    },
                    "description": "One per URL the run handed out, each route once (400 otherwise)."
                  },
                  "steps-done": {
                    "type": "array",
                    "items": {
                      "type": "string",
                      "enum": [
                        "kill-at",
                        "pause-at",
                        "cancel-at",
                        "prefill",
                        "disk-full-at"
                      ]
                    },
                    "description": "A step left out makes the verdict n/a, never a pass."
                  },
                  "detail": {
                    "type": "string",
                    "description": "With failure: the client's own error message."
                  },
                  "disk-full-outcome": {
                    "type": "string",
                    "enum": [
                      "success",
                      "failure",
                      "cancelled"
                    ],
                    "description": "With disk-full-at in steps-done: how the client said its first run, on the full filesystem, ended (a row with the step and without this is n/a)."
                  }
                }
              },
              "Verdict": {
                "type": "object",
                "required": [
                  "scenario",
                  "client",
                  "scheme",
                  "run",
                  "result",
                  "reason",
                  "time"
                ],
                "additionalProperties": false,
                "properties": {
                  "scenario": {
                    "type": "string"
                  },
                  "client": {
                    "type": "string"
                  },
                  "scheme": {
                    "type": "string",
                    "enum": [
                      "http",
                      "https",
                      "h2",
                      "h2c"
                    ]
                  },
                  "run": {
                    "type": "string"
                  },
                  "result": {
                    "type": "string",
                    "enum": [
                      "pass",
                      "fail",
                      "n/a"
                    ]
                  },
                  "reason": {
                    "type": "string"
                  },
                  "time": {
                    "type": "string",
                    "description": "RFC 3339."
                  },
                  "elapsed-ms": {
                    "type": "integer",
                    "minimum": 0
                  },
                  "notes": {
                    "type": "array",
                    "description": "The judge's notes on the run: facts beside the verdict that do not decide it.",
                    "items": {
                      "type": "string"
                    }
                  },
                  "grade": {
                    "$ref": "#/components/schemas/Grade"
                  },
                  "reasons": {
                    "type": "array",
                    "description": "Every violation with its grade; absent for a pass and n/a.",
                    "items": {
                      "$ref": "#/components/schemas/Violation"
                    }
                  },
                  "reproducer": {
                    "$ref": "#/components/schemas/Reproducer"
                  }
                }
              },
              "RunStatus": {
                "type": "object",
                "required": [
                  "run",
                  "scenario",
                  "client",
                  "scheme",
                  "state"
                ],
                "additionalProperties": false,
                "properties": {
                  "run": {
                    "type": "string"
                  },
                  "scenario": {
                    "type": "string"
                  },
                  "client": {
                    "type": "string"
                  },
                  "scheme": {
                    "type": "string",
                    "enum": [
                      "http",
                      "https",
                      "h2",
                      "h2c"
                    ]
                  },
                  "state": {
                    "type": "string",
                    "enum": [
                      "pending",
                      "judged"
                    ]
                  },
                  "verdict": {
                    "$ref": "#/components/schemas/Verdict"
                  }
                }
              },
              "Report": {
                "type": "object",
                "description": "The matrix as `rangecheck --json` writes it.",
                "required": [
                  "command",
                  "scheme",
                  "clients",
                  "scenarios",
                  "cells",
                  "summaries"
                ],
                "properties": {
                  "command": {
                    "type": "string"
                  },
                  "scheme": {
                    "type": "string"
                  },
                  "clients": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "scenarios": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "invocations": {
                    "type": "object"
                  },
                  "interruption": {
                    "type": "string",
                    "description": "Present when the run was stopped before every pair had run (`rangecheck run` on SIGINT or SIGTERM)."
                  },
                  "cells": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "required": [
                        "scenario",
                        "client",
                        "result",
                        "reason"
                      ],
                      "properties": {
                        "scenario": {
                          "type": "string"
                        },
                        "client": {
                          "type": "string"
                        },
                        "result": {
                          "type": "string",
                          "enum": [
                            "pass",
                            "FAIL",
                            "skipped",
                            "n/a"
                          ]
                        },
                        "reason": {
                          "type": "string"
                        },
                        "notes": {
                          "type": "array",
                          "description": "Facts beside the verdict that do not decide it.",
                          "items": {
                            "type": "string"
                          }
                        },
                        "seconds": {
                          "type": "number"
                        },
                        "grade": {
                          "$ref": "#/components/schemas/Grade"
                        },
                        "reasons": {
                          "type": "array",
                          "items": {
                            "$ref": "#/components/schemas/Violation"
                          }
                        },
                        "reproducer": {
                          "$ref": "#/components/schemas/Reproducer"
                        }
                      }
                    }
                  },
                  "summaries": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "required": [
                        "client",
                        "passed",
                        "failed",
                        "skipped"
                      ],
                      "properties": {
                        "client": {
                          "type": "string"
                        },
                        "passed": {
                          "type": "integer"
                        },
                        "failed": {
                          "type": "integer"
                        },
                        "skipped": {
                          "type": "integer"
                        },
                        "graded": {
                          "type": "object",
                          "description": "Failed cells by grade: corrupt, fail, unsafe, costly.",
                          "additionalProperties": {
                            "type": "integer",
                            "minimum": 0
                          }
                        }
                      }
                    }
                  }
                }
              },
              "Grade": {
                "type": "string",
                "enum": [
                  "pass",
                  "corrupt",
                  "fail",
                  "unsafe",
                  "costly"
                ],
                "description": "How bad a verdict is, worst first: corrupt (success claimed with wrong bytes), fail, unsafe (right this time, corrupts in the sibling row named), costly (over the row's bounds); docs/conformance.md, \"Grades\"."
              },
              "Violation": {
                "type": "object",
                "required": [
                  "reason",
                  "grade"
                ],
                "additionalProperties": false,
                "properties": {
                  "reason": {
                    "type": "string"
                  },
                  "grade": {
                    "$ref": "#/components/schemas/Grade"
                  },
                  "sibling": {
                    "type": "string",
                    "description": "For an unsafe violation, the scenario where the same behaviour corrupts the file."
                  }
                }
              },
              "Removal": {
                "type": "object",
                "required": [
                  "verdicts",
                  "pending"
                ],
                "additionalProperties": false,
                "properties": {
                  "verdicts": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Verdicts removed from the report and the results file."
                  },
                  "pending": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Runs handed out and not yet reported that were forgotten."
                  }
                }
              },
              "Reproducer": {
                "type": "object",
                "description": "How to reproduce a failed run by hand (docs/conformance.md, \"Reproducing a cell by hand\"): start `server`, run `setup`, run the client, do `steps`, then compare.",
                "required": [
                  "server",
                  "setup",
                  "client",
                  "clientIsCommand",
                  "steps",
                  "compare",
                  "directory"
                ],
                "additionalProperties": false,
                "properties": {
                  "server": {
                    "type": "string",
                    "description": "The `rangeserver` command line: the service's catalogue on ports of its own (8080; 8443 for https; 8081 for a row sent to the blackhole)."
                  },
                  "setup": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    },
                    "description": "Shell commands run before the client: a fresh directory, input files, a prefilled output."
                  },
                  "client": {
                    "type": "string",
                    "description": "The client's command line, or (for a tester's own client) what to fetch, in words."
                  },
                  "clientIsCommand": {
                    "type": "boolean",
                    "description": "Whether `client` is a command line."
                  },
                  "note": {
                    "type": "string",
                    "description": "What the client command stands in for, when it is not the column's own program."
                  },
                  "steps": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    },
                    "description": "The scenario's steps in words, in order."
                  },
                  "compare": {
                    "$ref": "#/components/schemas/ReproducerComparison"
                  },
                  "directory": {
                    "type": "string",
                    "description": "The reproduction's directory."
                  },
                  "kept": {
                    "type": "string",
                    "description": "The directory `rangecheck --keep` kept for the run itself."
                  }
                }
              },
              "ReproducerComparison": {
                "type": "object",
                "required": [
                  "expected",
                  "outputs",
                  "rules",
                  "journal",
                  "observed"
                ],
                "additionalProperties": false,
                "properties": {
                  "expected": {
                    "type": "string",
                    "description": "How a conforming client ends, in words."
                  },
                  "sha256": {
                    "type": "string",
                    "pattern": "^[0-9a-f]{64}$",
                    "description": "The SHA-256 every output must have; absent when the row expects no complete output."
                  },
                  "outputs": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "rules": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    },
                    "description": "The row's other rules, checked against the journal."
                  },
                  "journal": {
                    "type": "string",
                    "description": "The command printing the run's journal once its requests have ended."
                  },
                  "observed": {
                    "type": "string",
                    "description": "What this run did: the verdict's reason."
                  }
                }
              }
            },
            "securitySchemes": {
              "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "The `--token` of the service. Without `--token`, no credential is needed and only loopback peers are answered."
              },
              "queryToken": {
                "type": "apiKey",
                "in": "query",
                "name": "token",
                "description": "The `--token`, for a browser; the answer sets the `rangecheck-token` cookie."
              },
              "cookieToken": {
                "type": "apiKey",
                "in": "cookie",
                "name": "rangecheck-token",
                "description": "The cookie a `?token=` request set."
              }
            }
          }
        }
        """#
}
