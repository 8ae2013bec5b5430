package receiver

import (
	"container/list"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the deliveries remembered against replays.
const (
	// replayWindow is how long a verified delivery is remembered.
	replayWindow = time.Hour
	// maxRemembered caps the deliveries remembered over all receivers (about 6 MiB):
	// only verified ones enter, at most GlobalRate a second (20: it fills in 27 min).
	maxRemembered = 32768
	// maxRememberedPerNamespace caps the deliveries remembered for one namespace's
	// receivers: a tenant flooding its own receivers evicts its own, not others'
	// (eight namespaces at the cap fill maxRemembered).
	maxRememberedPerNamespace = maxRemembered / 8
)

// deliveries remembers the verified deliveries of the last replayWindow, by digest,
// so that one sent again is refused: by the host's delivery id, and where the host
// signs the body, by the body too (the id header is not signed: whoever captured a
// delivery can change it, but not the body).
type deliveries struct {
	window     time.Duration
	max, perNS int

	mu    sync.Mutex
	seen  map[[sha256.Size]byte]*list.Element
	order *list.List // of *remembered, oldest first
	// byNS holds each namespace's elements of order, oldest first.
	byNS map[string]*list.List
}

type remembered struct {
	key       [sha256.Size]byte
	at        time.Time
	namespace string
	inNS      *list.Element // its element in byNS[namespace]
}

func newDeliveries(window time.Duration, max, perNamespace int) *deliveries {
	return &deliveries{window: window, max: max, perNS: perNamespace,
		seen: map[[sha256.Size]byte]*list.Element{}, order: list.New(), byNS: map[string]*list.List{}}
}

// claim is true when none of keys was claimed within the window, and claims them
// all for namespace; false when one was (a replay), and then claims none.
func (d *deliveries) claim(namespace string, keys [][sha256.Size]byte, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for el := d.order.Front(); el != nil; el = d.order.Front() {
		if r := el.Value.(*remembered); now.Sub(r.at) < d.window {
			break
		}
		d.forget(el)
	}
	for _, k := range keys {
		if _, ok := d.seen[k]; ok {
			return false
		}
	}
	for _, k := range keys {
		if ns := d.byNS[namespace]; ns != nil && ns.Len() >= d.perNS {
			d.forget(ns.Front().Value.(*list.Element)) // the namespace's oldest: it evicts its own
		}
		for d.order.Len() >= d.max {
			d.forget(d.order.Front()) // the oldest goes first: memory stays bounded
		}
		r := &remembered{key: k, at: now, namespace: namespace}
		el := d.order.PushBack(r)
		ns := d.byNS[namespace]
		if ns == nil {
			ns = list.New()
			d.byNS[namespace] = ns
		}
		r.inNS = ns.PushBack(el)
		d.seen[k] = el
	}
	return true
}

func (d *deliveries) forget(el *list.Element) {
	r := d.order.Remove(el).(*remembered)
	delete(d.seen, r.key)
	if ns := d.byNS[r.namespace]; ns != nil {
		ns.Remove(r.inNS)
		if ns.Len() == 0 {
			delete(d.byNS, r.namespace)
		}
	}
}

// len is how many deliveries d remembers.
func (d *deliveries) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}

// deliveryKeys are what identifies a delivery of p to the receiver key: its
// delivery ids, and its body when p signs the body.
func deliveryKeys(key types.NamespacedName, p *provider, h http.Header, body []byte) [][sha256.Size]byte {
	digest := func(kind string, b []byte) [sha256.Size]byte {
		s := sha256.New()
		s.Write([]byte(kind + "\x00" + key.Namespace + "\x00" + key.Name + "\x00"))
		s.Write(b)
		var d [sha256.Size]byte
		copy(d[:], s.Sum(nil))
		return d
	}
	var keys [][sha256.Size]byte
	for _, name := range p.deliveryHeaders {
		if id := h.Get(name); id != "" {
			keys = append(keys, digest("id:"+name, []byte(id)))
		}
	}
	if p.signsBody {
		keys = append(keys, digest("body", body))
	}
	return keys
}
