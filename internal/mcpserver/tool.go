package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/jsonin"
)

// handler is a tool's handler: its arguments decoded, its answer (any JSON
// value) or a tool error.
type handler[In any] func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, any, error)

// addTool adds tool to s, with an input schema inferred from In, and reads
// its arguments with jsonin, the reader of every JSON body of the API, not
// with the SDK's mcp.AddTool: that one reads them into a map of float64
// before the typed struct, which rounds a budget above 2^53 and names Go
// types when a number does not fit ("cannot unmarshal number into Go
// struct field ... of type int64"). jsonin decodes numbers exactly, refuses
// control characters in any string and unknown arguments, and says what is
// wrong in the API's words. A required argument (a field without omitempty)
// that is missing is refused here, as the schema says.
func addTool[In any](s *mcp.Server, tool *mcp.Tool, h handler[In]) {
	schema := inputSchema[In]()
	t := *tool
	t.InputSchema = schema
	s.AddTool(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in In
		if err := decodeArguments(req.Params.Arguments, schema.Required, &in); err != nil {
			return errorResult(err), nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			return errorResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if out != nil {
			b, err := json.Marshal(out)
			if err != nil {
				return nil, fmt.Errorf("mcpserver: %s's answer: %w", tool.Name, err)
			}
			res.StructuredContent = json.RawMessage(b)
			if res.Content == nil {
				res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
			}
		}
		return res, nil
	})
}

// decodeArguments reads a tool's arguments into in: absent arguments are
// an empty object; a missing required one, and whatever jsonin refuses, is
// an invalid_parameter naming the argument.
func decodeArguments(args json.RawMessage, required []string, in any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := jsonin.Decode(args, in); err != nil {
		var je *jsonin.Error
		if errors.As(err, &je) && je.Syntax {
			return refusef("invalid_parameter: the arguments are not a JSON object: %s", je.Message)
		}
		if errors.As(err, &je) && je.Field == "" {
			return refusef("invalid_parameter: the arguments must be a JSON object: %s", je.Message)
		}
		return refusef("invalid_parameter: %s", err.Error())
	}
	var present map[string]json.RawMessage
	_ = json.Unmarshal(args, &present) // decoded above: an object
	for _, name := range required {
		if v, ok := present[name]; !ok || string(v) == "null" {
			return refusef("invalid_parameter: %s is required", name)
		}
	}
	return nil
}

func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// schemas keeps the tools' input schemas, inferred from their Go types once
// per process rather than once per request (New runs for every request).
var schemas sync.Map // reflect.Type -> *jsonschema.Schema

func inputSchema[In any]() *jsonschema.Schema {
	rt := reflect.TypeFor[In]()
	if s, ok := schemas.Load(rt); ok {
		return s.(*jsonschema.Schema)
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the input schema of %v: %v", rt, err)) // a programming error, found by any test
	}
	s.Required = slices.Clip(s.Required)
	noNull(s)
	v, _ := schemas.LoadOrStore(rt, s)
	return v.(*jsonschema.Schema)
}

// noNull drops "null" from the types the schema inference gives lists,
// maps and pointers: jsonin refuses null in every argument, and the schema
// says what the server takes.
func noNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if i := slices.Index(s.Types, "null"); i >= 0 {
		s.Types = slices.Delete(slices.Clone(s.Types), i, i+1)
		if len(s.Types) == 1 {
			s.Type, s.Types = s.Types[0], nil
		}
	}
	for _, p := range s.Properties {
		noNull(p)
	}
	noNull(s.Items)
	noNull(s.AdditionalProperties)
}
