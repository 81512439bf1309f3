package config

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeJSON5 decodes a small JSON5 document (comments, unquoted keys, trailing commas) into v,
// strictly: unknown fields are errors. It is for the command's auxiliary files (client tool
// definitions); the configuration file itself goes through Parse, which reports positions.
func DecodeJSON5(data []byte, v any) error {
	tree, err := unmarshal(data)
	if err != nil {
		return fmt.Errorf("not valid JSON5: %v", err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
