;; Heracles robot domain: a Spot walks between places of a Hydra scene graph,
;; inspects objects, picks them up and puts them down. The goal predicates are
;; those of the reference paper; goals may combine them with and / or / not.
;; Symbols: O<n> objects, P<n> mesh places, p<n> 3D places, R<n> rooms.
;;
;; The planner fills a compact problem per goal: only the robot's start, the
;; places the goal names, the places where goal objects can be reached and the
;; entry places of goal rooms are PDDL objects; `distance` holds shortest-path
;; lengths (centimetres) over the place graph and `road` the reachable pairs.
;; Comments directly above a predicate describe it to the language model.
(define (domain heracles)
  (:requirements :strips :typing :negative-preconditions :conditional-effects :action-costs)
  (:types place item room)

  (:predicates
    ;;; goal predicates
    ;; The robot must visit Place ?p at some point (a mesh place P<n> or a 3D place p<n>).
    (visited-place ?p - place)
    ;; The robot must be at Place ?p at the end (a mesh place P<n> or a 3D place p<n>).
    (at-place ?p - place)
    ;; The robot must visit Object ?o (go to where it can reach it) at some point.
    (visited-object ?o - item)
    ;; The robot must be at Object ?o at the end.
    (at-object ?o - item)
    ;; The robot must inspect Object ?o (make sure it is safe).
    (safe ?o - item)
    ;; The robot must visit Room ?r (enter any of its places) at some point.
    (visited-room ?r - room)
    ;; The robot must be in Room ?r at the end.
    (in-room ?r - room)
    ;; The robot must be holding Object ?o (pick it up).
    (holding ?o - item)
    ;; Object ?o must be located in Place ?p (the robot brings it there and puts it down).
    (object-in-place ?o - item ?p - place)

    ;;; internal predicates
    ;; The robot can walk from ?from to ?to (a shortest path exists).
    (road ?from ?to - place)
    ;; A robot standing at ?p can reach Object ?o.
    (object-at ?o - item ?p - place)
    ;; Place ?p belongs to Room ?r.
    (place-in-room ?p - place ?r - room)
    ;; The gripper is empty.
    (hand-empty)
  )

  (:functions
    (total-cost) - number
    (distance ?from ?to - place) - number
  )

  ;; Walk the shortest path between two places.
  (:action goto
    :parameters (?from ?to - place)
    :precondition (and (at-place ?from) (road ?from ?to))
    :effect (and
      (not (at-place ?from))
      (at-place ?to)
      (visited-place ?to)
      (forall (?r - room) (when (place-in-room ?from ?r) (not (in-room ?r))))
      (forall (?r - room) (when (place-in-room ?to ?r) (and (in-room ?r) (visited-room ?r))))
      (forall (?o - item) (when (object-at ?o ?from) (not (at-object ?o))))
      (forall (?o - item) (when (object-at ?o ?to) (and (at-object ?o) (visited-object ?o))))
      (increase (total-cost) (distance ?from ?to))))

  ;; Look at an object within reach.
  (:action inspect
    :parameters (?o - item ?p - place)
    :precondition (and (at-place ?p) (object-at ?o ?p))
    :effect (and (safe ?o) (increase (total-cost) 100)))

  ;; Pick up an object within reach with an empty gripper.
  (:action pick
    :parameters (?o - item ?p - place)
    :precondition (and (at-place ?p) (object-at ?o ?p) (hand-empty))
    :effect (and
      (holding ?o)
      (not (hand-empty))
      (not (object-at ?o ?p))
      (not (object-in-place ?o ?p))
      (increase (total-cost) 100)))

  ;; Put the held object down at the place the robot stands at.
  (:action place
    :parameters (?o - item ?p - place)
    :precondition (and (at-place ?p) (holding ?o))
    :effect (and
      (not (holding ?o))
      (hand-empty)
      (object-at ?o ?p)
      (object-in-place ?o ?p)
      (at-object ?o)
      (visited-object ?o)
      (increase (total-cost) 100)))
)
