package payment_test

import (
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/payment"
)

func ExampleTerms_Verify() {
	terms := payment.Terms{
		Wallet:        "0xabababababababababababababababababababab",
		Token:         "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		RequiredUnits: 2000,
	}
	hash, err := payment.ParseProof("0x" + "11111111111111111111111111111111" + "1111111111111111111111111111111F")
	if err != nil {
		fmt.Println(err)
		return
	}
	receipt := `{"transactionHash":"` + hash + `","status":"0x1","logs":[{
		"address":"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
		"topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
			"0x000000000000000000000000cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
			"0x000000000000000000000000abababababababababababababababababababab"],
		"data":"0x00000000000000000000000000000000000000000000000000000000000005dc"}]}`
	_, err = terms.Verify(hash, []byte(receipt))
	var rej *payment.Rejection
	if errors.As(err, &rej) {
		fmt.Println(rej)
	}
	fmt.Println(terms.WWWAuthenticate())
	// Output:
	// payment verification failed: underpaid: 1500 units < 2000 required
	// Locker-Txid network="base", token="USDC", amount="0.002", recipient="0xabababababababababababababababababababab"
}
